// ESM entry: the same objects as index.js (which installs the globals).
import api from './index.js';

export const { scheduler, Scheduler, TaskController, TaskSignal, TaskPriorityChangeEvent, install } = api;
export default api;
