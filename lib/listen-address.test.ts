import { describe, expect, it } from '@jest/globals';
import { parseListenAddress } from './listen-address.js';

describe('parseListenAddress', () => {
  it.each([
    ['127.0.0.1:8080', { host: '127.0.0.1', port: 8080 }],
    ['0.0.0.0:0', { host: '0.0.0.0', port: 0 }],
    ['localhost:8080', { host: 'localhost', port: 8080 }],
    ['[::1]:9', { host: '::1', port: 9 }],
    ['[::ffff:127.0.0.1]:9', { host: '::ffff:127.0.0.1', port: 9 }],
    [':8080', { host: undefined, port: 8080 }],
    ['8080', { host: undefined, port: 8080 }],
    [' :65535 ', { host: undefined, port: 65535 }],
  ])('%s', (text, expected) => expect(parseListenAddress(text)).toEqual(expected));

  it.each(['nope', '127.0.0.1', '::1:8080', '', 'host:', 'host:-1'])('refuses %j as not an address', (text) => {
    expect(() => parseListenAddress(text)).toThrow(/is not a listen address: expected HOST:PORT/);
  });

  it.each([
    ['127.0.0.1:65536', /port 65536 is above 65535/],
    ['[nothost]:1', /is not a listen address/],
    ['[1.2.3.4]:1', /1\.2\.3\.4 is not an IPv6 address/],
    ['[1::2::3]:1', /is not an IPv6 address/],
    ['a b:1', /a b is neither an IP address nor a host name/],
  ])('refuses %s', (text, message) => {
    expect(() => parseListenAddress(text)).toThrow(RangeError);
    expect(() => parseListenAddress(text)).toThrow(message);
  });
});
