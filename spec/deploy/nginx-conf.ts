/** A directive of an nginx config: `name args…;` or `name args… { children }`. */
export interface NginxDirective {
  name: string;
  args: string[];
  children?: NginxDirective[];
}

/**
 * Tokenizes and parses nginx config text into directives: `#` comments, single and double
 * quotes (with backslash escapes), `;`, `{`, `}`. Enough for checking our own deploy/nginx.conf;
 * no includes, no `${}` variables, no lua blocks.
 * @throws Error on unbalanced braces or a directive missing its `;`.
 */
export function parseNginxConf(text: string): NginxDirective[] {
  const tokens: { value: string; quoted: boolean }[] = [];
  for (let i = 0; i < text.length; ) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === ';' || c === '{' || c === '}') {
      tokens.push({ value: c, quoted: false });
      i++;
    } else if (c === '"' || c === "'") {
      let v = '';
      i++;
      while (i < text.length && text[i] !== c) {
        if (text[i] === '\\' && i + 1 < text.length) i++;
        v += text[i++];
      }
      if (i >= text.length) throw new Error('unterminated quote');
      i++;
      tokens.push({ value: v, quoted: true });
    } else {
      let v = '';
      while (i < text.length && !/[\s;{}#]/.test(text[i])) v += text[i++];
      tokens.push({ value: v, quoted: false });
    }
  }

  let pos = 0;
  const block = (nested: boolean): NginxDirective[] => {
    const out: NginxDirective[] = [];
    while (pos < tokens.length) {
      const t = tokens[pos];
      if (!t.quoted && t.value === '}') {
        if (!nested) throw new Error('unexpected }');
        pos++;
        return out;
      }
      const words: string[] = [];
      while (pos < tokens.length && (tokens[pos].quoted || !';{}'.includes(tokens[pos].value))) words.push(tokens[pos++].value);
      const end = tokens[pos];
      if (!end || words.length === 0) throw new Error(`directive without ; or block near ${JSON.stringify(words.join(' '))}`);
      pos++;
      if (end.value === ';') out.push({ name: words[0], args: words.slice(1) });
      else if (end.value === '{') out.push({ name: words[0], args: words.slice(1), children: block(true) });
      else throw new Error(`unexpected } after ${words[0]}`);
    }
    if (nested) throw new Error('unbalanced {');
    return out;
  };
  return block(false);
}

/** Every directive named `name`, searched depth-first through all blocks. */
export function findAll(directives: NginxDirective[], name: string): NginxDirective[] {
  const out: NginxDirective[] = [];
  for (const d of directives) {
    if (d.name === name) out.push(d);
    if (d.children) out.push(...findAll(d.children, name));
  }
  return out;
}
