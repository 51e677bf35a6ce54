import { Box, Text } from 'ink';

export interface AccountListProps {
  /** What is being chosen for: "Switch to which account?" */
  question: string;
  /** One line per account, as the command words it. */
  items: Array<{ label: string; active: boolean }>;
  /** Where the cursor is. */
  cursor: number;
  /** What was chosen, once it is: the last frame says it. */
  chosen?: number;
  cancelled?: boolean;
}

/** The accounts to choose from, the cursor's one highlighted and the active one marked. Props only. */
export function AccountList({ question, items, cursor, chosen, cancelled }: AccountListProps) {
  if (cancelled) return <Text>{question} Cancelled.</Text>;
  if (chosen !== undefined) return <Text>{question} <Text color="cyan">{items[chosen]!.label}</Text></Text>;
  return (
    <Box flexDirection="column">
      <Text bold>{question}</Text>
      {items.map((item, i) => (
        <Text key={i} color={i === cursor ? 'cyan' : undefined}>
          {i === cursor ? '❯ ' : '  '}
          {item.label}
          {item.active ? <Text dimColor> (active)</Text> : null}
        </Text>
      ))}
      <Text dimColor>↑/↓ to move, Enter to choose, Esc to cancel</Text>
    </Box>
  );
}
