import { isMediaType } from '../../src/http/media-type';

describe('isMediaType', () => {
  it.each(['text/event-stream', 'TEXT/Event-Stream', 'text/event-stream; charset=utf-8', 'TEXT/Event-Stream ; charset=latin1', ' text/event-stream\t;charset=utf-8', 'text/event-stream;'])(
    'matches %j case-insensitively, parameters and the whitespace around the type ignored',
    (value) => {
      expect(isMediaType(value, 'text/event-stream')).toBe(true);
    },
  );

  it.each(['text/event-streams', 'text/event', 'application/json, text/event-stream', 'text/event-stream, application/json', 'text/ event-stream', 'text/plain', ''])('does not match %j', (value) => {
    expect(isMediaType(value, 'text/event-stream')).toBe(false);
  });

  it('matches nothing when there is no value', () => {
    expect(isMediaType(undefined, 'application/json')).toBe(false);
    expect(isMediaType(null, 'application/json')).toBe(false);
  });
});
