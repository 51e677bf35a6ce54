import { Box, Text } from 'ink';
import Link from 'ink-link';
import Spinner from 'ink-spinner';
import { clock } from '../format.js';

export type LoginPhase = 'waiting' | 'reconnecting' | 'success' | 'failed' | 'cancelled';

export interface LoginViewProps {
  verificationUrl: string;
  userCode: string;
  phase: LoginPhase;
  /** Milliseconds until the wait ends (code expiry or --timeout-seconds). */
  msLeft: number;
  /** A small-mode QR code of the URL, when the terminal has room. */
  qr?: string;
  /** What happened with the browser: opened, or why not. */
  browserNote?: string;
  /** The last transient problem (slow_down, a dropped connection). */
  notice?: string;
  /** The final line: who is logged in, or what failed. */
  outcome?: string;
  hint?: string;
}

/**
 * The device-login screen. Link and code are there from the first frame and
 * stay; the host is shown plainly so a person can see where they are sent.
 */
export function LoginView(props: LoginViewProps) {
  const host = new URL(props.verificationUrl).host;
  return (
    <Box flexDirection="column" paddingX={1}>
      <Box marginTop={1}>
        <Text>Your one-time code: </Text>
        <Text bold inverse>{` ${props.userCode} `}</Text>
      </Box>
      <Box marginTop={1} flexDirection="column">
        <Text>Open this link and check the page shows the same code:</Text>
        <Text color="cyan" underline>
          <Link url={props.verificationUrl} fallback={false}>
            {props.verificationUrl}
          </Link>
        </Text>
        <Text dimColor>You are signing in to {host}</Text>
      </Box>
      {props.qr ? (
        <Box marginTop={1} flexDirection="column">
          <Text dimColor>Or scan it with your phone:</Text>
          <Text>{props.qr}</Text>
        </Box>
      ) : null}
      {props.browserNote ? (
        <Box marginTop={1}>
          <Text dimColor>{props.browserNote}</Text>
        </Box>
      ) : null}
      <Box marginTop={1}>
        <Status {...props} />
      </Box>
      {props.hint ? <Text dimColor>{props.hint}</Text> : null}
    </Box>
  );
}

function Status({ phase, msLeft, notice, outcome }: LoginViewProps) {
  switch (phase) {
    case 'waiting':
    case 'reconnecting':
      return (
        <Box flexDirection="column">
          <Text>
            <Text color="yellow">
              <Spinner type="dots" />
            </Text>
            {` Waiting for approval in the browser… ${clock(msLeft)} left`}
          </Text>
          {notice ? <Text color={phase === 'reconnecting' ? 'yellow' : undefined} dimColor={phase !== 'reconnecting'}>{`  ${notice}`}</Text> : null}
        </Box>
      );
    case 'success':
      return <Text color="green">{`✓ ${outcome}`}</Text>;
    case 'cancelled':
      return <Text color="yellow">{`✗ ${outcome ?? 'Cancelled. Nothing was saved.'}`}</Text>;
    case 'failed':
      return <Text color="red">{`✗ ${outcome}`}</Text>;
  }
}
