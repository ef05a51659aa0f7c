import { SseLimitError } from '../../errors';
import { COLON, SPACE } from './bytes';
import type { SseEvent, SseParserOptions } from './event';
import { decodeLine } from './utf8';

/**
 * @internal The event being built from one stream's lines (WHATWG HTML §9.2.6, "Interpreting an
 * event stream", the field rules and "dispatch the event"): the data, event type and last event
 * ID buffers. The parser finds the lines; this gives them meaning.
 */
export class EventFields {
  private data = '';
  private dataLines = 0;
  /** Input bytes of the data so far (values plus the LFs joining them). */
  private dataBytes = 0;
  private eventType = '';
  private lastEventId: string;
  /** The last event ID last handed to `onLastEventId` (the start value counts as handed). */
  private reportedLastEventId: string;

  constructor(
    private readonly options: SseParserOptions,
    private readonly maxEventBytes: number,
    /** The stream's starting last event ID (`SseParserOptions.lastEventId`). */
    private readonly initialLastEventId: string,
    /** Stops the parser with a limit error. */
    private readonly fail: (error: SseLimitError) => void,
  ) {
    this.lastEventId = initialLastEventId;
    this.reportedLastEventId = initialLastEventId;
  }

  /** Input bytes of the data of the event being built. */
  get heldBytes(): number {
    return this.dataBytes;
  }

  /** Back to the start of a stream: buffers empty, the last event ID the starting one. */
  reset(): void {
    this.data = '';
    this.dataLines = 0;
    this.dataBytes = 0;
    this.eventType = '';
    this.lastEventId = this.initialLastEventId;
    this.reportedLastEventId = this.initialLastEventId;
  }

  /**
   * §9.2.6 line rules on one line (terminator excluded): bytes `buf[start, end)`, and, when
   * `text` is given, the same line decoded as `text[cstart, cend)`; otherwise values are decoded
   * from the bytes (`ascii`: known to be ASCII).
   */
  line(
    buf: Buffer,
    start: number,
    end: number,
    text: string | null,
    cstart: number,
    cend: number,
    ascii: boolean,
  ): void {
    if (start === end) {
      this.dispatch();
      return;
    }
    if (buf[start] === COLON) {
      // "If the line starts with a U+003A COLON character (:)": a comment.
      const onComment = this.options.onComment;
      if (onComment !== undefined) {
        let from = start + 1;
        if (from < end && buf[from] === SPACE) from++;
        onComment(from === end ? '' : text !== null ? text.slice(cstart + (from - start), cend) : decodeLine(buf, from, end, ascii));
      }
      return;
    }
    // Field names are ASCII, and 0x3A never occurs inside a UTF-8 sequence, so comparing
    // bytes equals comparing the decoded strings.
    let colon = start + 1;
    while (colon < end && buf[colon] !== COLON) colon++;
    let valueStart = colon + 1;
    if (colon === end) valueStart = end; // no colon: the whole line is the field name, value ""
    else if (valueStart < end && buf[valueStart] === SPACE) valueStart++;

    switch (colon - start) {
      case 4:
        if (buf[start] === 0x64 && buf[start + 1] === 0x61 && buf[start + 2] === 0x74 && buf[start + 3] === 0x61) {
          this.appendData(end - valueStart, valueStart === end ? '' : text !== null ? text.slice(cstart + (valueStart - start), cend) : decodeLine(buf, valueStart, end, ascii));
        }
        return;
      case 5:
        if (buf[start] === 0x65) {
          if (buf[start + 1] === 0x76 && buf[start + 2] === 0x65 && buf[start + 3] === 0x6e && buf[start + 4] === 0x74) {
            this.eventType = valueStart === end ? '' : text !== null ? text.slice(cstart + (valueStart - start), cend) : decodeLine(buf, valueStart, end, ascii);
          }
        } else if (
          buf[start] === 0x72 &&
          buf[start + 1] === 0x65 &&
          buf[start + 2] === 0x74 &&
          buf[start + 3] === 0x72 &&
          buf[start + 4] === 0x79
        ) {
          this.retry(buf, valueStart, end);
        }
        return;
      case 2:
        if (buf[start] === 0x69 && buf[start + 1] === 0x64) {
          // "If the field value does not contain U+0000 NULL, then set the last event ID buffer".
          for (let i = valueStart; i < end; i++) if (buf[i] === 0) return;
          this.lastEventId = valueStart === end ? '' : text !== null ? text.slice(cstart + (valueStart - start), cend) : decodeLine(buf, valueStart, end, ascii);
        }
        return;
      default:
        return; // unknown field: ignored
    }
  }

  private appendData(bytes: number, value: string): void {
    const total = this.dataLines === 0 ? bytes : this.dataBytes + 1 + bytes;
    if (total > this.maxEventBytes) {
      this.fail(new SseLimitError('event', this.maxEventBytes));
      return;
    }
    this.dataBytes = total;
    this.data = this.dataLines === 0 ? value : this.data + '\n' + value;
    this.dataLines++;
  }

  private retry(buf: Buffer, start: number, end: number): void {
    // "If the field value consists of only ASCII digits": an empty value is ignored too.
    if (start === end) return;
    for (let i = start; i < end; i++) {
      const c = buf[i] as number;
      if (c < 0x30 || c > 0x39) return;
    }
    this.options.onRetry?.(Number.parseInt(buf.toString('latin1', start, end), 10));
  }

  /** §9.2.6 "dispatch the event". */
  private dispatch(): void {
    // Step 1: the source's last event ID string is set, with or without an event.
    const onLastEventId = this.options.onLastEventId;
    if (onLastEventId !== undefined && this.lastEventId !== this.reportedLastEventId) {
      this.reportedLastEventId = this.lastEventId;
      onLastEventId(this.lastEventId);
    }
    if (this.dataLines === 0) {
      // "If the data buffer is an empty string, set the data buffer and the event type buffer
      // to the empty string and return."
      this.eventType = '';
      return;
    }
    const event: SseEvent = {
      type: this.eventType === '' ? 'message' : this.eventType,
      data: this.data,
      lastEventId: this.lastEventId,
    };
    this.data = '';
    this.dataLines = 0;
    this.dataBytes = 0;
    this.eventType = '';
    this.options.onEvent(event);
  }
}
