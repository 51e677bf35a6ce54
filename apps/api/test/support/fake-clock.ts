import { Clock } from '../../src/common/clock.js';

/** A clock that only moves when a test says so. */
export class FakeClock extends Clock {
  private current: number;
  constructor(start = Date.parse('2026-01-01T12:00:00.000Z')) {
    super();
    this.current = start;
  }
  override now(): Date {
    return new Date(this.current);
  }
  advanceSeconds(seconds: number): void {
    this.current += seconds * 1000;
  }
}
