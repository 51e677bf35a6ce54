import { cleanup, render } from 'ink-testing-library';
import { qrFor } from '../src/ui/login-screen.js';
import { LoginView, type LoginViewProps } from '../src/ui/login-view.js';

const base: LoginViewProps = {
  verificationUrl: 'https://id.example.com/device?user_code=BCDF-GHJK',
  userCode: 'BCDF-GHJK',
  phase: 'waiting',
  msLeft: 9 * 60_000 + 52_000,
};

describe('LoginView', () => {
  afterEach(cleanup); // unmounts, stopping the spinner's timer
  it('shows the link, the code and the host in its first frame', () => {
    const { lastFrame } = render(<LoginView {...base} />);
    const frame = lastFrame()!;
    expect(frame).toContain('BCDF-GHJK');
    expect(frame).toContain('https://id.example.com/device?user_code=BCDF-GHJK');
    expect(frame).toContain('You are signing in to id.example.com');
  });

  it('shows a spinner with the time left while waiting, and the latest notice', () => {
    const { lastFrame, rerender } = render(<LoginView {...base} />);
    expect(lastFrame()).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Waiting for approval in the browser… 9:52 left/);
    rerender(<LoginView {...base} phase="reconnecting" msLeft={61_000} notice="Can't reach id.example.com; trying again in 5 s." />);
    expect(lastFrame()).toContain('1:01 left');
    expect(lastFrame()).toContain('trying again in 5 s');
  });

  it('keeps link and code on screen in every end state, and lets the QR code and the browser note go', () => {
    for (const [phase, outcome, expected] of [
      ['success', 'Logged in as Ada <ada@example.com>', '✓ Logged in as Ada <ada@example.com>'],
      ['failed', 'Login was denied in the browser, or the code expired.', '✗ Login was denied in the browser, or the code expired.'],
      ['failed', 'The code expired after 600 s without approval.', '✗ The code expired after 600 s without approval.'],
      ['cancelled', undefined, '✗ Cancelled. Nothing was saved.'],
    ] as const) {
      const frame = render(
        <LoginView {...base} phase={phase} outcome={outcome} hint="Run `prospect auth:login` to try again." qr={{ text: '▄▄▄\n█ █', placement: 'side' }} browserNote="Opened the link in your browser." />,
      ).lastFrame()!;
      expect(frame).toContain(expected);
      expect(frame).toContain('BCDF-GHJK');
      expect(frame).toContain(base.verificationUrl);
      expect(frame).not.toContain('Waiting for approval');
      expect(frame).not.toContain('Or scan it with your phone:');
      expect(frame).not.toContain('█ █');
      expect(frame).not.toContain('Opened the link in your browser.');
    }
  });

  it('shows the QR code beside or below the link, and what happened with the browser', () => {
    for (const placement of ['side', 'below'] as const) {
      const frame = render(<LoginView {...base} qr={{ text: '▄▄▄\n█ █', placement }} browserNote="Opened the link in your browser." />).lastFrame()!;
      expect(frame).toContain('Or scan it with your phone:');
      expect(frame).toContain('█ █');
      expect(frame).toContain('Opened the link in your browser.');
      const lines = frame.split('\n');
      const qrLine = lines.findIndex((l) => l.includes('Or scan it'));
      const linkLine = lines.findIndex((l) => l.includes(base.verificationUrl));
      if (placement === 'side') expect(qrLine).toBeLessThan(linkLine);
      else expect(qrLine).toBeGreaterThan(linkLine);
    }
  });
});

describe('qrFor', () => {
  const url = 'http://localhost:3000/device?user_code=BCDF-GHJK';
  it('puts the QR code beside the link on a wide terminal, below it on a tall one, and leaves it out when it does not fit', () => {
    expect(qrFor(url, { columns: 120, rows: 30 })?.placement).toBe('side');
    expect(qrFor(url, { columns: 80, rows: 50 })?.placement).toBe('below');
    expect(qrFor(url, { columns: 80, rows: 24 })).toBeUndefined();
    expect(qrFor(url, {})).toBeUndefined();
  });
});
