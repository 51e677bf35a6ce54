import { render, useInput } from 'ink';
import { useEffect, useState } from 'react';
import { AccountList, type AccountListProps } from './account-list.js';

/**
 * Everything the picker needs, handed in. It imports nothing else of the CLI: it is bundled
 * apart from the rest (build.mjs), as the login screen is.
 */
export interface AccountPickerOptions {
  question: string;
  items: AccountListProps['items'];
  /** Where the cursor starts. */
  initial: number;
  stdout: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
}

function AccountPicker({ options, onDone }: { options: AccountPickerOptions; onDone: (choice: number | undefined) => void }) {
  const { items } = options;
  const [cursor, setCursor] = useState(options.initial);
  const [outcome, setOutcome] = useState<{ chosen?: number; cancelled?: boolean }>();
  useInput(
    (input, key) => {
      if (key.upArrow || input === 'k') setCursor((at) => (at + items.length - 1) % items.length);
      else if (key.downArrow || input === 'j') setCursor((at) => (at + 1) % items.length);
      else if (key.return) setOutcome({ chosen: cursor });
      // Ink takes the keyboard in raw mode: Ctrl-C arrives here, not as SIGINT.
      else if (key.escape || input === 'q' || (key.ctrl && input === 'c')) setOutcome({ cancelled: true });
    },
    { isActive: !outcome },
  );
  // Reported once the last frame (the choice, or "Cancelled.") is committed; runAccountPicker then
  // unmounts, which leaves that frame on screen (and resolves waitUntilExit, which an exit() here would not).
  useEffect(() => {
    if (outcome) onDone(outcome.chosen);
  }, [outcome]);
  return <AccountList question={options.question} items={items} cursor={cursor} {...outcome} />;
}

/** Asks which account; resolves its index, or undefined when the person cancels. */
export async function runAccountPicker(options: AccountPickerOptions): Promise<number | undefined> {
  let done!: (choice: number | undefined) => void;
  const chosen = new Promise<number | undefined>((resolve) => (done = resolve));
  const app = render(<AccountPicker options={options} onDone={done} />, { stdout: options.stdout, stdin: options.stdin, exitOnCtrlC: false, patchConsole: false });
  try {
    return await chosen;
  } finally {
    app.unmount();
    await app.waitUntilExit().catch(() => undefined);
  }
}
