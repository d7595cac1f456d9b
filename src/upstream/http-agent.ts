import { Agent } from 'undici';
import type { Config } from '../config/config.js';

/**
 * The one undici `Agent` of a process, with the configured connect/headers/body timeouts (ms).
 * `bodyTimeout` is the longest silence between two body chunks, so a stalled body fails with
 * `UND_ERR_BODY_TIMEOUT` instead of hanging (DESIGN.md §4).
 */
export function createHttpAgent(
  config: Pick<Config, 'connectTimeoutMs' | 'headersTimeoutMs' | 'bodyTimeoutMs'>,
) {
  return new Agent({
    connect: { timeout: config.connectTimeoutMs },
    headersTimeout: config.headersTimeoutMs,
    bodyTimeout: config.bodyTimeoutMs,
  });
}
