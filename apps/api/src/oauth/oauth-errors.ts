import type { ErrorCode } from '@prospect/contract';
import { ApiException } from '../common/api-exception.js';

/** An RFC 6749 §5.2 error: 400 with its code; the filter adds `error_description` and no-store. */
export const oauthError = (code: ErrorCode, description: string, status = 400, headers: Record<string, string> = {}) =>
  new ApiException(status, code, description, headers);
