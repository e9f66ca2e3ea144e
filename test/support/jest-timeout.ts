// Jest reads `testTimeout` only from the top level of its configuration, not from a project's (jest-circus takes the
// global value), so each project states its default timeout as the global SVC_TEST_TIMEOUT_MS and this setup file
// applies it. Without it every project ran with Jest's 5 s default whatever jest.config.js said.
import { jest } from '@jest/globals';

const ms = Number((globalThis as { SVC_TEST_TIMEOUT_MS?: unknown }).SVC_TEST_TIMEOUT_MS);
if (Number.isFinite(ms) && ms > 0) jest.setTimeout(ms);
