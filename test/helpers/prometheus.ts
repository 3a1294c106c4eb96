import { spawn } from "node:child_process";
import { ensurePythonVenv } from "../../src/codegen/toolchain.js";

/** One sample of a metric family: the sample's name (e.g. `…_bucket`), labels and value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A metric family as Prometheus reads it. */
export interface Family {
  name: string;
  /** "counter", "gauge", "histogram", … */
  type: string;
  samples: Sample[];
}

const PARSE = [
  "import sys, json",
  "from prometheus_client.parser import text_string_to_metric_families",
  "families = text_string_to_metric_families(sys.stdin.read())",
  "print(json.dumps([{'name': f.name, 'type': f.type, 'samples': [{'name': s.name, 'labels': s.labels, 'value': s.value} for s in f.samples]} for f in families]))",
].join("\n");

/**
 * Parses Prometheus text exposition with the Prometheus reference client's
 * parser (Python prometheus_client, pinned in src/codegen/python-requirements.txt);
 * rejects with the parser's error when the text is not valid exposition format.
 */
export async function parsePrometheusText(text: string): Promise<Map<string, Family>> {
  const python = await ensurePythonVenv();
  const child = spawn(python, ["-c", PARSE]);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  child.stdin.end(text);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  if (code !== 0) throw new Error(`not valid Prometheus text: ${stderr}`);
  const families = JSON.parse(stdout) as Family[];
  return new Map(families.map((f) => [f.name, f]));
}

/** The value of the sample named `name` whose labels include `labels`, or undefined. */
export function sampleValue(families: Map<string, Family>, family: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return families
    .get(family)
    ?.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}
