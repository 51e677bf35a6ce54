import { cleanup, render } from 'ink-testing-library';
import { AccountList } from '../src/ui/account-list.js';

const items = [
  { label: 'Ada Lovelace <ada@example.com> on http://a.example', active: true },
  { label: 'Grace Hopper <grace@example.com> on http://b.example', active: false },
];

describe('AccountList', () => {
  afterEach(cleanup);
  it('shows every account, the active one marked and the cursor on one, with the keys to use', () => {
    const frame = render(<AccountList question="Switch to which account?" items={items} cursor={1} />).lastFrame()!;
    expect(frame.split('\n')).toEqual([
      'Switch to which account?',
      '  Ada Lovelace <ada@example.com> on http://a.example (active)',
      '❯ Grace Hopper <grace@example.com> on http://b.example',
      '↑/↓ to move, Enter to choose, Esc to cancel',
    ]);
  });
  it('once chosen, or cancelled, leaves one line', () => {
    expect(render(<AccountList question="Switch to which account?" items={items} cursor={1} chosen={1} />).lastFrame()).toBe('Switch to which account? Grace Hopper <grace@example.com> on http://b.example');
    expect(render(<AccountList question="Log out of which account?" items={items} cursor={0} cancelled />).lastFrame()).toBe('Log out of which account? Cancelled.');
  });
});
