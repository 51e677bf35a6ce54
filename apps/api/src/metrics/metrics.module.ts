import { Global, Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config.js';
import { Sql } from '../database/sql.js';
import { Metrics } from './metrics.js';
import { MetricsServer } from './metrics-server.js';

/** Prometheus metrics, recorded anywhere (global), served on METRICS_PORT when it is set. */
@Global()
@Module({
  providers: [
    {
      provide: Metrics,
      inject: [Sql],
      useFactory: (sql: Sql) => {
        const metrics = new Metrics();
        const pool = sql.pool;
        metrics.gauge('prospect_db_pool_connections', 'Connections of the pg pool, by state (total, idle, waiting: requests waiting for one).', () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }), 'state');
        return metrics;
      },
    },
    { provide: MetricsServer, inject: [Metrics, AppConfig], useFactory: (metrics: Metrics, config: AppConfig) => new MetricsServer(metrics, { port: config.metricsPort, host: config.metricsHost }) },
  ],
  exports: [Metrics, MetricsServer],
})
export class MetricsModule {}
