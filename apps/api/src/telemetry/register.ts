import { startTracing, tracingRequested, type Tracing } from './tracing.js';

/**
 * main.ts's first import, so this runs before any module that loads Express, pg or http: ES
 * modules run in the order they are imported, and this one does its work synchronously.
 * Without an OTLP endpoint nothing of OpenTelemetry is loaded and requests pay nothing.
 */
export const tracing: Tracing | undefined = tracingRequested(process.env) ? startTracing(process.env) : undefined;
