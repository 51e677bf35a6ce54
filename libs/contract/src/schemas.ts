import { z } from 'zod';
import { ERROR_CODES } from './constants.js';

/**
 * Every wire shape of the contract, defined once. The API validates requests
 * with these schemas; the CLI parses responses and the session file with them.
 */

const isoTimestamp = z.iso.datetime({ offset: true });

/** Normalized user (seed §2.1). */
export const UserSchema = z.object({
  id: z.string().min(1),
  email: z.string().min(1),
  name: z.string(),
});
export type User = z.infer<typeof UserSchema>;

const shortText = (max: number) => z.string().trim().min(1).max(max);

/** Body of POST /api/cli/auth/device/start. Optional: shown on the approval page. */
export const DeviceStartRequestSchema = z.strictObject({
  clientName: shortText(100).optional(),
  hostname: shortText(255).optional(),
});
export type DeviceStartRequest = z.infer<typeof DeviceStartRequestSchema>;

/** Response of POST /api/cli/auth/device/start (seed §2.2). */
export const DeviceStartResponseSchema = z.object({
  deviceCode: z.string().min(1),
  userCode: z.string().min(1),
  verificationUrl: z.url(),
  intervalSeconds: z.number().int().positive(),
  expiresInSeconds: z.number().int().positive(),
});
export type DeviceStartResponse = z.infer<typeof DeviceStartResponseSchema>;

/** Body of POST /api/cli/auth/device/poll. */
export const DevicePollRequestSchema = z.strictObject({
  deviceCode: z.string().min(1).max(200),
});
export type DevicePollRequest = z.infer<typeof DevicePollRequestSchema>;

/** Response of POST /api/cli/auth/device/poll: exactly one of three shapes (seed §2.3, §4.2). */
export const DevicePollResponseSchema = z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('pending') }),
  z.strictObject({ status: z.literal('denied') }),
  z.strictObject({
    status: z.literal('authorized'),
    accessToken: z.string().min(1),
    refreshToken: z.string().min(1).optional(),
    expiresAt: isoTimestamp,
    user: UserSchema,
  }),
]);
export type DevicePollResponse = z.infer<typeof DevicePollResponseSchema>;

/** Response of GET /api/cli/auth/me as this API sends it (the seed's top-level variant). */
export const MeResponseSchema = z.object({
  user: UserSchema,
  expiresAt: isoTimestamp,
});
export type MeResponse = z.infer<typeof MeResponseSchema>;

/** Body of POST /api/cli/auth/token (seed §4.4). */
export const IssueTokenRequestSchema = z.strictObject({
  /** Admins only: issue for this user instead of oneself. */
  userEmail: z.string().trim().min(3).max(320).optional(),
  label: shortText(100).optional(),
  expiresInSeconds: z.number().int().positive().max(10 * 365 * 24 * 3600).optional(),
});
export type IssueTokenRequest = z.infer<typeof IssueTokenRequestSchema>;

/** Response of POST /api/cli/auth/token. */
export const IssuedTokenResponseSchema = z.object({
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1).optional(),
  expiresAt: isoTimestamp,
  user: UserSchema,
});
export type IssuedTokenResponse = z.infer<typeof IssuedTokenResponseSchema>;

/** The one error body of every non-2xx answer. */
export const ErrorBodySchema = z.object({
  statusCode: z.number().int(),
  error: z.string(),
  message: z.string(),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;
export const KNOWN_ERROR_CODES = Object.values(ERROR_CODES);

/** The CLI's session file (seed §2.4): exactly these fields. */
export const SessionFileSchema = z.strictObject({
  accessToken: z.string().min(1),
  refreshToken: z.string().min(1).optional(),
  apiBaseUrl: z.url({ protocol: /^https?$/ }),
  user: UserSchema,
  expiresAt: isoTimestamp,
  createdAt: isoTimestamp,
});
export type SessionFile = z.infer<typeof SessionFileSchema>;
