// Preloaded with `node --require` into server-everything, whose streamable
// HTTP transport calls app.listen(PORT) with no host and so would bind every
// interface. This makes any listen() that names a port but no host bind
// 127.0.0.1 instead, keeping the end-to-end peers loopback-only.
'use strict';
const net = require('node:net');
const orig = net.Server.prototype.listen;
net.Server.prototype.listen = function listen(...args) {
  const first = args[0];
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    const rest = args.slice(1);
    if (typeof rest[0] !== 'string') {
      return orig.call(this, Number(first), '127.0.0.1', ...rest);
    }
  } else if (first !== null && typeof first === 'object' && !Array.isArray(first) &&
             first.port !== undefined && first.host === undefined && first.path === undefined) {
    return orig.call(this, { ...first, host: '127.0.0.1' }, ...args.slice(1));
  }
  return orig.apply(this, args);
};
