// Types for what the package installs on globalThis and exports: the WICG
// Prioritized Task Scheduling API (spec IDL names and shapes, as a DOM lib
// would declare them). AbortController, AbortSignal, Event and EventTarget
// are the environment's (TypeScript's "dom" lib, or @types/node).

declare global {
  type TaskPriority = 'user-blocking' | 'user-visible' | 'background';

  interface SchedulerPostTaskOptions {
    signal?: AbortSignal;
    priority?: TaskPriority;
    delay?: number;
  }

  interface SchedulerYieldOptions {
    signal?: AbortSignal | 'inherit';
    priority?: TaskPriority | 'inherit';
  }

  interface SchedulerPostTaskCallback<T> {
    (): T | PromiseLike<T>;
  }

  interface Scheduler {
    postTask<T>(callback: SchedulerPostTaskCallback<T>, options?: SchedulerPostTaskOptions): Promise<T>;
    yield(options?: SchedulerYieldOptions): Promise<void>;
  }
  var Scheduler: {
    prototype: Scheduler;
  };

  interface TaskControllerInit {
    priority?: TaskPriority;
  }

  interface TaskController extends AbortController {
    readonly signal: TaskSignal;
    setPriority(priority: TaskPriority): void;
  }
  var TaskController: {
    prototype: TaskController;
    new (init?: TaskControllerInit): TaskController;
  };

  interface TaskSignalAnyInit {
    priority?: TaskPriority | TaskSignal;
  }

  interface TaskSignalEventMap extends AbortSignalEventMap {
    prioritychange: TaskPriorityChangeEvent;
  }

  interface TaskSignal extends AbortSignal {
    readonly priority: TaskPriority;
    onprioritychange: ((this: TaskSignal, ev: TaskPriorityChangeEvent) => any) | null;
    addEventListener<K extends keyof TaskSignalEventMap>(type: K,
      listener: (this: TaskSignal, ev: TaskSignalEventMap[K]) => any,
      options?: boolean | AddEventListenerOptions): void;
    addEventListener(type: string, listener: EventListenerOrEventListenerObject,
      options?: boolean | AddEventListenerOptions): void;
    removeEventListener<K extends keyof TaskSignalEventMap>(type: K,
      listener: (this: TaskSignal, ev: TaskSignalEventMap[K]) => any,
      options?: boolean | EventListenerOptions): void;
    removeEventListener(type: string, listener: EventListenerOrEventListenerObject,
      options?: boolean | EventListenerOptions): void;
  }
  var TaskSignal: {
    prototype: TaskSignal;
    any(signals: AbortSignal[], init?: TaskSignalAnyInit): TaskSignal;
  };

  interface TaskPriorityChangeEventInit extends EventInit {
    previousPriority: TaskPriority;
  }

  interface TaskPriorityChangeEvent extends Event {
    readonly previousPriority: TaskPriority;
  }
  var TaskPriorityChangeEvent: {
    prototype: TaskPriorityChangeEvent;
    new (type: string, init: TaskPriorityChangeEventInit): TaskPriorityChangeEvent;
  };

  var scheduler: Scheduler;
}

export declare const scheduler: Scheduler;
export declare const Scheduler: typeof globalThis.Scheduler;
export declare const TaskController: typeof globalThis.TaskController;
export declare const TaskSignal: typeof globalThis.TaskSignal;
export declare const TaskPriorityChangeEvent: typeof globalThis.TaskPriorityChangeEvent;
/** Installs the globals on target (globalThis by default; the entry does it on load). */
export declare function install(target?: object): void;
/** queueMicrotask that carries the current scheduling state to its callback. */
export declare function queueMicrotask(callback: () => void): void;
declare const api: {
  scheduler: Scheduler;
  Scheduler: typeof globalThis.Scheduler;
  TaskController: typeof globalThis.TaskController;
  TaskSignal: typeof globalThis.TaskSignal;
  TaskPriorityChangeEvent: typeof globalThis.TaskPriorityChangeEvent;
  install: typeof install;
  queueMicrotask: typeof queueMicrotask;
};
export default api;
