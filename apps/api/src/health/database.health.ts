import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

const PING_TIMEOUT_MS = 1_500;

/** Up when one `SELECT 1` round-trips through our own pool within the timeout. */
@Injectable()
export class DatabaseHealthIndicator {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly indicators: HealthIndicatorService,
  ) {}

  async ping(key = 'database') {
    const indicator = this.indicators.check(key);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.db.query('SELECT 1'),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), PING_TIMEOUT_MS))),
      ]);
      return indicator.up();
    } catch (err) {
      return indicator.down({ message: err instanceof Error ? err.message : String(err) });
    } finally {
      clearTimeout(timer);
    }
  }
}
