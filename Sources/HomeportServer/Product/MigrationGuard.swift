/// What a product's migration statement does to the schema and the data, read well enough to
/// keep it among the product's own tables: every table, index, view or trigger it creates,
/// changes or drops, the table a trigger or an index is on, and every table it writes
/// (`INSERT`, `UPDATE`, `DELETE`, `REPLACE`, `TRUNCATE`), in a trigger's body and a
/// dollar-quoted function body too. Comments, quoting (`"x"`, `` `x` ``, `[x]`) and a schema
/// (`main.users`) hide nothing; a string that holds more than one statement is refused, since
/// SQLite would run the first and drop the rest without a word.
struct MigrationGuard {
    /// What a statement touches, or why it cannot be read.
    enum Reading: Equatable {
        case touches([String])
        case severalStatements
    }

    /// Reads `sql`, one migration statement.
    static func read(_ sql: String) -> Reading {
        let statements = split(tokens(sql))
        guard statements.count <= 1 else { return .severalStatements }
        return .touches(statements.first.map(touched) ?? [])
    }

    enum Token: Equatable {
        /// A keyword or a name, lowercased and unquoted.
        case word(String)
        /// A string literal (its text does not matter).
        case string
        /// A dollar-quoted body: SQL of its own (a PostgreSQL function's).
        case body([Token])
        case semicolon
        case open
        case close
        case dot
        case other
    }

    static func tokens(_ sql: String) -> [Token] {
        let text = Array(sql.unicodeScalars)
        var tokens: [Token] = []
        var i = 0
        func isWordScalar(_ c: Unicode.Scalar) -> Bool {
            c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_" || c == "$"
        }
        while i < text.count {
            let c = text[i]
            let next: Unicode.Scalar? = i + 1 < text.count ? text[i + 1] : nil
            if c.properties.isWhitespace {
                i += 1
            } else if c == "-", next == "-" {
                while i < text.count, text[i] != "\n" { i += 1 }
            } else if c == "/", next == "*" {
                i += 2
                while i < text.count, !(text[i] == "*" && i + 1 < text.count && text[i + 1] == "/") { i += 1 }
                i += 2
            } else if c == "'" {
                i += 1
                while i < text.count {
                    if text[i] == "'" {
                        if i + 1 < text.count, text[i + 1] == "'" { i += 2 } else { break }
                    } else {
                        i += 1
                    }
                }
                i += 1
                tokens.append(.string)
            } else if c == "\"" || c == "`" || c == "[" {
                let end: Unicode.Scalar = c == "[" ? "]" : c
                var name = ""
                i += 1
                while i < text.count {
                    if text[i] == end {
                        if end != "]", i + 1 < text.count, text[i + 1] == end {
                            name.unicodeScalars.append(end)
                            i += 2
                            continue
                        }
                        break
                    }
                    name.unicodeScalars.append(text[i])
                    i += 1
                }
                i += 1
                tokens.append(.word(name.lowercased()))
            } else if c == "$", let close = dollarTag(text, at: i) {
                // $tag$ … $tag$: the body is read as SQL of its own.
                let tag = text[i..<close]
                var end = close
                while end < text.count, !text[end...].starts(with: tag) { end += 1 }
                tokens.append(.body(self.tokens(String(String.UnicodeScalarView(text[close..<min(end, text.count)])))))
                i = min(end + tag.count, text.count)
            } else if isWordScalar(c) {
                var word = ""
                while i < text.count, isWordScalar(text[i]) {
                    word.unicodeScalars.append(text[i])
                    i += 1
                }
                tokens.append(.word(word.lowercased()))
            } else {
                switch c {
                case ";": tokens.append(.semicolon)
                case "(": tokens.append(.open)
                case ")": tokens.append(.close)
                case ".": tokens.append(.dot)
                default: tokens.append(.other)
                }
                i += 1
            }
        }
        return tokens
    }

    /// The index just past the closing `$` of a dollar-quote tag (`$$`, `$body$`) at `start`.
    private static func dollarTag(_ text: [Unicode.Scalar], at start: Int) -> Int? {
        var i = start + 1
        while i < text.count, text[i].properties.isAlphabetic || text[i] == "_" { i += 1 }
        return i < text.count && text[i] == "$" ? i + 1 : nil
    }

    /// The statements of `tokens`: split at `;`, except inside a trigger's `BEGIN … END`.
    static func split(_ tokens: [Token]) -> [[Token]] {
        var statements: [[Token]] = []
        var current: [Token] = []
        var inTriggerBody = false
        var cases = 0
        for token in tokens {
            if token == .semicolon, !inTriggerBody {
                if !current.isEmpty { statements.append(current) }
                current = []
                continue
            }
            current.append(token)
            guard case .word(let word) = token else { continue }
            if isTrigger(current), word == "begin", !inTriggerBody {
                inTriggerBody = true
            } else if inTriggerBody, word == "case" {
                cases += 1
            } else if inTriggerBody, word == "end" {
                if cases > 0 { cases -= 1 } else { inTriggerBody = false }
            }
        }
        if !current.isEmpty { statements.append(current) }
        return statements
    }

    private static func isTrigger(_ statement: [Token]) -> Bool {
        let words = statement.prefix(4).compactMap { token -> String? in
            if case .word(let word) = token { return word }
            return nil
        }
        return words.first == "create" && words.dropFirst().prefix(2).contains("trigger")
    }

    /// The objects `statement` creates, changes, drops or writes, and those of what it holds.
    static func touched(_ statement: [Token]) -> [String] {
        var touched: [String] = []
        var index = 0
        func word(_ at: Int) -> String? {
            guard at < statement.count, case .word(let word) = statement[at] else { return nil }
            return word
        }
        /// The name at `at`, past a schema (`main.users` is `users`).
        func name(_ at: Int) -> String? {
            guard let first = word(at) else { return nil }
            if at + 2 < statement.count, statement[at + 1] == .dot, let second = word(at + 2) { return second }
            return first
        }
        func skip(_ words: [String]) {
            while let current = word(index), words.contains(current) { index += 1 }
        }
        while index < statement.count {
            if case .body(let inner) = statement[index] {
                for each in split(inner) { touched += self.touched(each) }
                index += 1
                continue
            }
            guard let verb = word(index) else {
                index += 1
                continue
            }
            index += 1
            switch verb {
            case "create", "drop":
                skip(["unique", "temporary", "temp", "or", "replace", "materialized"])
                guard let kind = word(index), ["table", "index", "view", "trigger"].contains(kind) else { continue }
                index += 1
                skip(["if", "not", "exists", "concurrently"])
                if let object = name(index) { touched.append(object) }
                if verb == "create", kind == "index" || kind == "trigger",
                    let on = statement[index...].firstIndex(of: .word("on")), let table = name(on + 1)
                {
                    touched.append(table)
                }
            case "alter":
                guard word(index) == "table" else { continue }
                index += 1
                skip(["if", "exists", "only"])
                if let object = name(index) { touched.append(object) }
                if let to = statement[index...].firstIndex(of: .word("to")), word(to - 1) == "rename",
                    let renamed = name(to + 1)
                {
                    touched.append(renamed)
                }
            case "insert", "replace":
                // Not a trigger's event (`AFTER INSERT ON t`): `INSERT [OR …] INTO t`.
                skip(["or", "rollback", "abort", "replace", "fail", "ignore"])
                if word(index) == "into", let table = name(index + 1) { touched.append(table) }
            case "update":
                // `UPDATE [OR …] [ONLY] t [AS a] SET`: not `ON UPDATE CASCADE`, nor a trigger's
                // `UPDATE OF c ON t`.
                skip(["or", "rollback", "abort", "replace", "fail", "ignore", "only"])
                let after = index + (index + 1 < statement.count && statement[index + 1] == .dot ? 3 : 1)
                let window = min(after, statement.count)..<min(after + 3, statement.count)
                let set = statement[window].contains(.word("set"))
                if set, let table = name(index), table != "set" { touched.append(table) }
            case "delete":
                // `DELETE FROM t`: not `ON DELETE CASCADE`, nor a trigger's `DELETE ON t`.
                guard word(index) == "from" else { continue }
                index += 1
                skip(["only"])
                if let table = name(index) { touched.append(table) }
            case "truncate":
                skip(["table", "only"])
                while let table = name(index) {
                    touched.append(table)
                    index += statement.count > index + 1 && statement[index + 1] == .dot ? 3 : 1
                    guard index < statement.count, statement[index] == .other else { break }
                    index += 1
                }
            default:
                continue
            }
        }
        return touched
    }
}
