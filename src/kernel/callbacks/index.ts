// The callback protocol: the five scheduler hooks, global registration, and
// withCallbacks blocks scoped per computation (AsyncLocalStorage).
export { Callback, type CallbackHooks, type BlockHooks, type TwoCallbackHooks, type CallbackOptions, type TaskInfo, withCallbacks, activeCallbacks } from "./callback";
export type { State, TaskTiming, WorkerId } from "./state";
