import { ConnectError, Code, type ServiceImpl } from "@connectrpc/connect";
import { HealthCheckResponse_ServingStatus as ServingStatus, type Health } from "../../gen/health/v1/health_pb.js";

/** Names answered by the health service: "" (the whole server) and each public service. */
export type HealthProbe = () => Promise<boolean>;

/**
 * Handlers of grpc.health.v1.Health (the standard gRPC health protocol).
 * Check answers SERVING while `probe` resolves true (the database answers
 * and the server is not shutting down), NOT_SERVING otherwise; an unknown
 * service name is NOT_FOUND. Watch sends the status, then each change
 * (polled every second) until the call ends. No API key is needed.
 */
export function createHealthService(serviceNames: readonly string[], probe: HealthProbe): ServiceImpl<typeof Health> {
  const known = new Set(["", ...serviceNames]);
  const statusOf = async () => ((await probe().catch(() => false)) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
  return {
    async check(req) {
      if (!known.has(req.service)) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      return { status: await statusOf() };
    },
    async *watch(req, context) {
      if (!known.has(req.service)) {
        yield { status: ServingStatus.SERVICE_UNKNOWN };
        return;
      }
      let last: ServingStatus | undefined;
      while (!context.signal.aborted) {
        const status = await statusOf();
        if (status !== last) yield { status };
        last = status;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    },
    async list() {
      const status = await statusOf();
      return { statuses: Object.fromEntries([...known].map((name) => [name, { status }])) };
    },
  };
}
