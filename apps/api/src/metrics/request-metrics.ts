import type { Request } from 'express';
import type { Metrics } from './metrics.js';

type Labels = Readonly<{ method: string; route: string; status: string }>;

/** What Express puts in `req.route` once a route matched: one object per route, for the process's life. */
type MatchedRoute = { path?: string };

const UNMATCHED: MatchedRoute = {};

/**
 * Counts an answered request (`http_requests_total`) and its duration (`http_request_duration_seconds`)
 * under the route's template, never the path a client typed: bounded labels.
 *
 * The labels object of a (route, method, status) is built once and kept (issue #35): a request used
 * to build a new one and a new status string for each of the two metrics. Keyed by Express's route
 * object (a WeakMap: routes are never dropped, but nothing here should keep one alive), then method,
 * then status; the set is as bounded as the labels themselves.
 */
export function requestMetrics(metrics: Metrics): (req: Request, status: number, seconds: number) => void {
  const byRoute = new WeakMap<MatchedRoute, Map<string, Map<number, Labels>>>();
  const labelsOf = (route: MatchedRoute, method: string, status: number): Labels => {
    let byMethod = byRoute.get(route);
    if (!byMethod) byRoute.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let labels = byStatus.get(status);
    if (!labels) byStatus.set(status, (labels = Object.freeze({ method, route: route.path ?? 'unmatched', status: String(status) })));
    return labels;
  };
  return (req, status, seconds) => {
    const labels = labelsOf((req.route as MatchedRoute | undefined) ?? UNMATCHED, req.method, status);
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, seconds);
  };
}
