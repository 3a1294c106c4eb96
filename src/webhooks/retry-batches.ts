import type { Db } from "mongodb";
import type { Scheduler } from "../jobs/scheduler.js";
import type { Clock } from "../shared/clock.js";
import { newId } from "../shared/ids.js";
import type { BatchItem, BatchItemsRecord, DeliveryStore } from "./delivery-store.js";
import type { EndpointCache } from "./endpoint-cache.js";
import { GroupCommit } from "../store/group-commit.js";
import { toBatchItem, type WorkItem } from "./work-item.js";

/** Agenda job that runs one retry batch (data: `{ batch_id }`). */
export const BATCH_JOB = "webhooks.batch";

/** Most items in one retry batch. */
export const MAX_BATCH_ITEMS = 500;

/** An item handed over: due at a time, or paused until its endpoint is enabled. */
type Handover = { item: WorkItem; due: Date } | { item: WorkItem; pausedFor: string };

/**
 * Retry batches: attempts waiting for their time, grouped (items handed over
 * together and due within the same bucket share a batch of at most
 * MAX_BATCH_ITEMS), each with one Agenda job due at its time (BATCH_JOB)
 * that any worker may run. A batch is a small header in `webhook_batches`
 * and its items in `webhook_batch_items`; it is written before its job, so
 * that nothing handed over is lost, and deleted once run. Items of a
 * disabled endpoint wait in a paused batch without a job until the endpoint
 * is enabled (or deleted).
 */
export class RetryBatches {
  private readonly bucketMs: number;
  private readonly handovers = new GroupCommit<Handover, void>((entries) => this.write(entries), MAX_BATCH_ITEMS);

  constructor(
    private readonly o: { db: Db; store: DeliveryStore; scheduler: Scheduler; cache: EndpointCache; clock: Clock; schedule: readonly number[] },
  ) {
    // Due times are rounded up to a bucket: a quarter of the shortest retry delay, 10 ms to 1 s.
    const shortest = Math.min(...o.schedule.filter((d) => d > 0), 4000);
    this.bucketMs = Math.max(10, Math.min(1000, Math.floor(shortest / 4)));
  }

  /** Hands an item over to run at `due` (or at once when past); resolves once it is durable. */
  add(item: WorkItem, due: Date): Promise<void> {
    return this.handovers.add({ item, due });
  }

  /** Hands over an item of a disabled endpoint; it waits until the endpoint is enabled. */
  pause(item: WorkItem, endpointId: string): Promise<void> {
    return this.handovers.add({ item, pausedFor: endpointId });
  }

  /** The items of a batch, or null when it ran already. */
  items(batchId: string): Promise<BatchItemsRecord | null> {
    return this.o.store.batchItems.findOne({ _id: batchId });
  }

  /** Deletes a batch that has run. */
  async finish(batchId: string): Promise<void> {
    await this.o.store.batches.deleteOne({ _id: batchId });
    await this.o.store.batchItems.deleteOne({ _id: batchId });
  }

  /** Gives every batch paused for `endpointId` a job now (after it was enabled or deleted). */
  async resumePaused(endpointId: string): Promise<void> {
    const paused = await this.o.store.batches.find({ paused_endpoint_id: endpointId }).toArray();
    for (const batch of paused) await this.schedule(batch._id, this.o.clock.now());
  }

  /**
   * Gives a job to the batches that should have one and do not: paused ones
   * whose endpoint is enabled again or deleted, and any whose job was never
   * created (a crash between the two writes, older than `graceMs`). Reads
   * only the batch headers and the job list: both stay small.
   */
  async scheduleStray(graceMs: number): Promise<void> {
    const now = this.o.clock.now();
    const [batches, jobs] = await Promise.all([
      this.o.store.batches.find({}).toArray(),
      this.o.db.collection<{ data?: { batch_id?: string } }>("jobs").find({ name: BATCH_JOB }, { projection: { data: 1 } }).toArray(),
    ]);
    const withJob = new Set(jobs.map((j) => j.data?.batch_id));
    for (const batch of batches) {
      if (withJob.has(batch._id)) continue;
      if (batch.paused_endpoint_id) {
        const endpoint = await this.o.cache.get(batch.paused_endpoint_id, 0);
        if (!endpoint || endpoint.enabled) await this.schedule(batch._id, now);
      } else if (batch.created_at.getTime() < now.getTime() - graceMs) {
        await this.schedule(batch._id, batch.due_at ?? now);
      }
    }
  }

  /** Creates the batch's job, unless it has one. */
  private async schedule(batchId: string, due: Date): Promise<void> {
    await this.o.scheduler.agenda
      .create(BATCH_JOB, { batch_id: batchId })
      .unique({ "data.batch_id": batchId }, { insertOnly: true })
      .schedule(due)
      .save();
  }

  private async write(entries: Handover[]): Promise<void[]> {
    const now = this.o.clock.now();
    type Group = { due: Date | null; paused: string | null; items: BatchItem[] };
    const groups = new Map<string, Group[]>();
    for (const entry of entries) {
      const paused = "pausedFor" in entry ? entry.pausedFor : null;
      const due = "due" in entry ? new Date(Math.ceil(Math.max(entry.due.getTime(), now.getTime()) / this.bucketMs) * this.bucketMs) : null;
      const key = paused ? `paused:${paused}` : `due:${due?.getTime()}`;
      const list = groups.get(key) ?? [];
      groups.set(key, list);
      let group = list[list.length - 1];
      if (!group || group.items.length >= MAX_BATCH_ITEMS) list.push((group = { due, paused, items: [] }));
      group.items.push(toBatchItem(entry.item));
    }
    const batches = [...groups.values()].flat().map((g) => ({ _id: newId(), ...g }));
    await this.o.store.batchItems.insertMany(batches.map((b) => ({ _id: b._id, items: b.items })));
    await this.o.store.batches.insertMany(
      batches.map((b) => ({ _id: b._id, size: b.items.length, due_at: b.due, paused_endpoint_id: b.paused, created_at: now })),
    );
    for (const batch of batches) {
      if (batch.due) {
        await this.schedule(batch._id, batch.due);
      } else if (batch.paused) {
        // Enabled again meanwhile (its resume may have missed this batch): run it now.
        const endpoint = await this.o.cache.get(batch.paused, 0);
        if (endpoint?.enabled) await this.schedule(batch._id, now);
      }
    }
    return entries.map(() => undefined);
  }
}
