// Sends a counter to the tenant "pong" and waits for it to come back, five
// times: the message goes through pong's agent inbox as a postTask on its
// thread.
let rounds = 0;
onmessage = (e) => {
  if (e.source !== 'pong') return;
  rounds++;
  if (rounds < 5) host.postMessage('pong', { n: e.data.n + 1 });
  else console.log(`ping: ${rounds} round trips, last n = ${e.data.n}`);
};
host.postMessage('pong', { n: 0 });
