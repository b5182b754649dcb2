// Answers every message from "ping" with the same counter, after a
// user-visible task of its own.
onmessage = (e) => {
  scheduler.postTask(() => host.postMessage(e.source, e.data));
};
