import { Injectable } from '@nestjs/common';

/** The time source of every rule that depends on time, so tests can move it. */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }
}
