// The callback protocol: the five scheduler hooks, global registration, and
// withCallbacks blocks scoped per computation (AsyncLocalStorage).
export { Callback, type CallbackHooks, type BlockHooks, type TwoCallbackHooks, type CallbackOptions, type WorkerId, type TaskInfo, withCallbacks, activeCallbacks } from "./callback";
