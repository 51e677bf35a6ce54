import { SmtpSink } from './smtp-sink.js';
import { startTestApp, type TestApp, type TestAppOptions } from './test-app.js';

/**
 * The app sending its mail to a fresh SMTP sink: what every spec that reads a mailed link starts.
 * The app's `close()` also stops the sink, so a spec's `afterAll` stays one call.
 */
export async function startAppWithMail(options: TestAppOptions = {}): Promise<{ api: TestApp; smtp: SmtpSink }> {
  const smtp = await SmtpSink.start();
  try {
    const api = await startTestApp({ ...options, env: { SMTP_URL: smtp.url, ...options.env } });
    const closeApp = api.close;
    const close = async () => {
      try {
        await closeApp();
      } finally {
        await smtp.stop();
      }
    };
    return { api: { ...api, close }, smtp };
  } catch (error) {
    await smtp.stop();
    throw error;
  }
}
