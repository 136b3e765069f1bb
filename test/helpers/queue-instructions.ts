// Queue placement's instructions (ClusterState.takeQueueInstructions) in a form tests compare.
import type { QueueInstruction } from "../../src/kernel/distributed/scheduler/placement";

/** Each instruction as its op and the keys it names, in order. */
export function queueOps(instructions: readonly QueueInstruction[]): [op: "enqueue" | "forget", keys: string[]][] {
  return instructions.map((instruction) => (instruction.op === "enqueue" ? ["enqueue", instruction.tasks.map((task) => task.key)] : ["forget", [...instruction.keys]]));
}
