import { Box, Text } from 'ink';
import Link from 'ink-link';
import Spinner from 'ink-spinner';
import { clock } from '../format.js';

export type LoginPhase = 'waiting' | 'reconnecting' | 'success' | 'failed' | 'cancelled';

export interface LoginViewProps {
  verificationUrl: string;
  userCode: string;
  /** The approval page is on another host than the API the CLI was given (otherHostNote). */
  hostNote?: string;
  phase: LoginPhase;
  /** Milliseconds until the wait ends (code expiry or --timeout-seconds). */
  msLeft: number;
  /** A small-mode QR code of the URL, when the terminal has room: beside the link, or below it. */
  qr?: { text: string; placement: 'side' | 'below' };
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
 * stay, as a record of what was approved; the host is shown plainly so a person
 * can see where they are sent. Once the wait is over, the QR code and the
 * browser's note, which only served the wait, leave the screen.
 */
export function LoginView(props: LoginViewProps) {
  const host = new URL(props.verificationUrl).host;
  const over = props.phase === 'success' || props.phase === 'failed' || props.phase === 'cancelled';
  const instructions = (
    <Box flexDirection="column">
      <Box marginTop={1} flexDirection="column">
        <Text>Your one-time code:</Text>
        <Box borderStyle="round" borderColor="cyan" paddingX={2} alignSelf="flex-start">
          <Text bold>{props.userCode}</Text>
        </Box>
      </Box>
      <Box marginTop={1} flexDirection="column">
        <Text>Open this link and check that the page shows the same code:</Text>
        <Text color="cyan" underline>
          <Link url={props.verificationUrl} fallback={false}>
            {props.verificationUrl}
          </Link>
        </Text>
        <Text>
          You are signing in to <Text bold>{host}</Text>
        </Text>
        {props.hostNote ? <Text color="yellow">{props.hostNote}</Text> : null}
      </Box>
    </Box>
  );
  const qr = props.qr && !over ? (
    <Box marginTop={1} flexDirection="column">
      <Text dimColor>Or scan it with your phone:</Text>
      <Text>{props.qr.text}</Text>
    </Box>
  ) : null;
  return (
    <Box flexDirection="column" paddingX={1}>
      {qr && props.qr?.placement === 'side' ? (
        <Box flexDirection="row" columnGap={4}>
          {instructions}
          {qr}
        </Box>
      ) : (
        <>
          {instructions}
          {qr}
        </>
      )}
      {props.browserNote && !over ? (
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
          <Text dimColor>{'  Ctrl-C to cancel'}</Text>
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
