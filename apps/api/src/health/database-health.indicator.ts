import { Injectable } from '@nestjs/common';
import { TypeOrmHealthIndicator } from '@nestjs/terminus';

/**
 * terminus's TypeOrmHealthIndicator (its `pingCheck` runs `SELECT 1` through our
 * DataSource with a timeout), minus its constructor's check that `typeorm` and
 * `@nestjs/typeorm` are installed: they are this app's own dependencies, and the
 * check uses `import.meta.resolve`, which jest's ES-module runtime does not have,
 * so the tests could not build the real app with it.
 */
@Injectable()
export class DatabaseHealthIndicator extends TypeOrmHealthIndicator {}
Object.defineProperty(DatabaseHealthIndicator.prototype, 'checkDependantPackages', { value: () => undefined });
