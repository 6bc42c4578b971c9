import HomeportStorage

/// Reads a product's migration statement well enough to keep it among the product's own tables:
/// a statement is one of `CREATE`, `ALTER` or `DROP` of a table, an index, a view or a trigger,
/// or `INSERT`, `UPDATE`, `DELETE`, `REPLACE` (in a `WITH` too), and every table it creates,
/// changes, drops, writes, hangs a trigger or an index on, inherits from or renames to is
/// listed. Anything else (`PRAGMA`, `ATTACH`, `DO`, a function, a rule, a schema, a grant, a
/// `SELECT` for its side effects) is refused, as is a string of several statements (SQLite would
/// run the first and drop the rest without a word) and a NUL (the database would stop reading
/// there). Comments, quoting and schemas are read as each database reads them.
///
/// It catches a product's mistakes before they meet Homeport's tables; it is no sandbox: a
/// product's code runs in the server's process and could reach the database anyway.
struct MigrationGuard {
    /// What a statement touches, or why it is refused.
    enum Reading: Equatable {
        case touches([String])
        case severalStatements
        case refused(String)
    }

    /// Reads `sql`, one migration statement, as `dialect` reads it.
    static func read(_ sql: String, dialect: SQLDialect) -> Reading {
        guard !sql.unicodeScalars.contains("\0") else { return .refused("a NUL character") }
        let tokens: [Token]
        do {
            var tokenizer = Tokenizer(sql, dialect: dialect)
            tokens = try tokenizer.tokens()
        } catch let problem as Problem {
            return .refused(problem.description)
        } catch {
            return .refused("\(error)")
        }
        let statements = split(tokens)
        guard statements.count <= 1 else { return .severalStatements }
        guard let statement = statements.first else { return .touches([]) }
        do {
            return .touches(try touched(statement))
        } catch let problem as Problem {
            return .refused(problem.description)
        } catch {
            return .refused("\(error)")
        }
    }

    struct Problem: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    enum Token: Equatable {
        /// A keyword or a name, lowercased: it may be either.
        case word(String)
        /// A quoted name (`"x"`, `` `x` ``, `[x]`), as it is: never a keyword.
        case quoted(String)
        /// A string (its text does not matter: it runs as nothing).
        case string
        case semicolon
        case open
        case close
        case comma
        case dot
        case other
    }

    /// The statements of `tokens`: split at `;`, except inside a SQLite trigger's `BEGIN … END`.
    static func split(_ tokens: [Token]) -> [[Token]] {
        var statements: [[Token]] = []
        var current: [Token] = []
        var inBody = false
        var cases = 0
        for token in tokens {
            if token == .semicolon, !inBody {
                if !current.isEmpty { statements.append(current) }
                current = []
                continue
            }
            current.append(token)
            guard case .word(let word) = token else { continue }
            if !inBody, word == "begin", isTrigger(current) {
                inBody = true
            } else if inBody, word == "case" {
                cases += 1
            } else if inBody, word == "end" {
                if cases > 0 { cases -= 1 } else { inBody = false }
            }
        }
        if !current.isEmpty { statements.append(current) }
        return statements
    }

    private static func isTrigger(_ statement: [Token]) -> Bool {
        var words = statement.makeIterator()
        guard words.next() == .word("create") else { return false }
        for token in words.prefix(2) where token == .word("trigger") { return true }
        return false
    }

    static let allowed = "CREATE, ALTER or DROP of a TABLE, INDEX, VIEW or TRIGGER, or INSERT, UPDATE, DELETE"

    /// The tables `statement` creates, changes, drops or writes; throws for a statement of
    /// another kind.
    static func touched(_ statement: [Token]) throws -> [String] {
        var reader = StatementReader(statement)
        guard case .word(let verb) = statement.first else { throw Problem("a statement that is not \(allowed)") }
        reader.index = 1
        switch verb {
        case "create": try reader.create()
        case "alter": try reader.alter()
        case "drop": try reader.drop()
        case "insert", "replace", "update", "delete", "with":
            reader.index = 0
            reader.writes()
        default:
            throw Problem("'\(verb.prefix(40))' (a migration statement is \(allowed))")
        }
        return reader.touched
    }
}

/// Walks one statement's tokens, collecting what it touches.
private struct StatementReader {
    typealias Token = MigrationGuard.Token
    let tokens: [Token]
    var index = 0
    var touched: [String] = []

    init(_ tokens: [Token]) {
        self.tokens = tokens
    }

    func word(_ at: Int) -> String? {
        guard at >= 0, at < tokens.count, case .word(let word) = tokens[at] else { return nil }
        return word
    }

    /// The name starting at `at` (a word or a quoted name, past any schema and database:
    /// `db.public.users` is `users`), and the index just past it.
    func name(_ at: Int) -> (String, Int)? {
        var at = at
        var last: String?
        while at < tokens.count {
            switch tokens[at] {
            case .word(let word): last = word
            case .quoted(let quoted): last = quoted.lowercased()
            default: return nil
            }
            at += 1
            guard at < tokens.count, tokens[at] == .dot else { break }
            at += 1
        }
        return last.map { ($0, at) }
    }

    mutating func skip(_ words: Set<String>) {
        while let current = word(index), words.contains(current) { index += 1 }
    }

    /// Adds the name at `index` (past an opening parenthesis PostgreSQL allows) and moves past it.
    @discardableResult
    mutating func takeName() -> Bool {
        if index < tokens.count, tokens[index] == .open { index += 1 }
        guard let (name, next) = name(index) else { return false }
        touched.append(name)
        index = next
        return true
    }

    /// The first index of the keyword `word` from `start`.
    func find(_ word: String, from start: Int) -> Int? {
        guard start < tokens.count else { return nil }
        return tokens[start...].firstIndex(of: .word(word))
    }

    mutating func create() throws {
        skip(["unique", "temporary", "temp", "unlogged", "or", "replace", "materialized", "if", "not", "exists"])
        guard let kind = word(index), ["table", "index", "view", "trigger"].contains(kind) else {
            throw MigrationGuard.Problem(
                "CREATE \(word(index)?.uppercased().prefix(40) ?? "…") (a migration statement is \(MigrationGuard.allowed))"
            )
        }
        index += 1
        skip(["if", "not", "exists", "concurrently"])
        takeName()
        switch kind {
        case "index":
            if let on = find("on", from: index) {
                index = on + 1
                skip(["only"])
                takeName()
            }
        case "trigger":
            // `… [BEFORE|AFTER|INSTEAD OF] event [OF columns] ON table …`: the first `ON` is the
            // table's (a quoted column named "on" is no keyword).
            if let on = find("on", from: index) {
                index = on + 1
                takeName()
            }
            // PostgreSQL's `EXECUTE FUNCTION f()`: only the product's own.
            if let execute = find("execute", from: index), let kind = word(execute + 1),
                ["function", "procedure"].contains(kind)
            {
                index = execute + 2
                takeName()
            }
            // SQLite's body: its statements write only the product's tables.
            if let begin = find("begin", from: index) {
                index = begin + 1
                writes()
            }
        case "table":
            // `INHERITS (a, b)` and `PARTITION OF t` make Homeport's rows the table's.
            if let inherits = find("inherits", from: index), inherits + 1 < tokens.count,
                tokens[inherits + 1] == .open
            {
                index = inherits + 2
                while takeName(), index < tokens.count, tokens[index] == .comma { index += 1 }
            }
            if let partition = find("partition", from: index), word(partition + 1) == "of" {
                index = partition + 2
                takeName()
            }
        default:
            break
        }
    }

    mutating func alter() throws {
        guard word(index) == "table" else {
            throw MigrationGuard.Problem(
                "ALTER \(word(index)?.uppercased().prefix(40) ?? "…") (a migration statement is \(MigrationGuard.allowed))"
            )
        }
        index += 1
        skip(["if", "exists", "only"])
        takeName()
        let start = index
        // `RENAME TO t` renames the table; `RENAME [COLUMN] a TO b`, a column.
        if let rename = find("rename", from: start), word(rename + 1) == "to" {
            index = rename + 2
            takeName()
        }
        // PostgreSQL's `INHERIT t` and `ATTACH PARTITION t` make another table's rows this one's.
        if let inherit = find("inherit", from: start) {
            index = inherit + 1
            takeName()
        }
        if let attach = find("attach", from: start), word(attach + 1) == "partition" {
            index = attach + 2
            takeName()
        }
    }

    mutating func drop() throws {
        guard let kind = word(index), ["table", "index", "view", "trigger"].contains(kind) else {
            throw MigrationGuard.Problem(
                "DROP \(word(index)?.uppercased().prefix(40) ?? "…") (a migration statement is \(MigrationGuard.allowed))"
            )
        }
        index += 1
        skip(["if", "exists", "concurrently", "materialized"])
        while takeName(), index < tokens.count, tokens[index] == .comma { index += 1 }
        if kind == "trigger", let on = find("on", from: index) {
            index = on + 1
            takeName()
        }
    }

    /// The tables written from `index` on: every `INSERT`, `UPDATE`, `DELETE` and `REPLACE` that
    /// stands where a statement starts (at the start, after `(`, `)`, `,`, `AS`, `BEGIN` or `;`),
    /// so that `ON DELETE CASCADE`, `AFTER UPDATE OF` and `FOR UPDATE` are not read as writes.
    mutating func writes() {
        let starts: Set<String> = ["begin", "as", "then", "else"]
        while index < tokens.count {
            let at = index
            index += 1
            guard let verb = word(at), ["insert", "replace", "update", "delete"].contains(verb) else { continue }
            let statementStart: Bool =
                switch at == 0 ? nil : tokens[at - 1] {
                case nil, .open?, .close?, .comma?, .semicolon?: true
                case .word(let before)?: starts.contains(before)
                default: false
                }
            guard statementStart else { continue }
            skip(["or", "rollback", "abort", "replace", "fail", "ignore"])
            switch verb {
            case "insert", "replace":
                if word(index) == "into" { index += 1 }
                takeName()
            case "update":
                skip(["only"])
                takeName()
            default:
                if word(index) == "from" { index += 1 }
                skip(["only"])
                takeName()
            }
        }
    }
}

/// Reads SQL into tokens as `dialect` reads it: its comments, strings and quoted names.
private struct Tokenizer {
    typealias Token = MigrationGuard.Token
    let text: [Unicode.Scalar]
    let dialect: SQLDialect
    var i = 0

    init(_ sql: String, dialect: SQLDialect) {
        text = Array(sql.unicodeScalars)
        self.dialect = dialect
    }

    func at(_ offset: Int) -> Unicode.Scalar? {
        i + offset < text.count ? text[i + offset] : nil
    }

    static func isNameStart(_ c: Unicode.Scalar) -> Bool {
        c.properties.isAlphabetic || c == "_" || c.value >= 0x80
    }

    static func isNamePart(_ c: Unicode.Scalar) -> Bool {
        isNameStart(c) || ("0"..."9").contains(c) || c == "$"
    }

    mutating func tokens() throws -> [Token] {
        var tokens: [Token] = []
        while let c = at(0) {
            if c.properties.isWhitespace {
                i += 1
            } else if c == "-", at(1) == "-" {
                // To the end of the line: PostgreSQL ends one at a carriage return too.
                while let c = at(0), c != "\n", !(dialect == .postgres && c == "\r") { i += 1 }
            } else if c == "/", at(1) == "*" {
                try comment()
            } else if c == "'" {
                try string(backslashes: false)
                tokens.append(.string)
            } else if dialect == .postgres, c == "e" || c == "E", at(1) == "'" {
                i += 1
                try string(backslashes: true)
                tokens.append(.string)
            } else if c == "\"" || (dialect == .sqlite && (c == "`" || c == "[")) {
                tokens.append(.quoted(try quoted(closing: c == "[" ? "]" : c)))
            } else if dialect == .postgres, c == "$", let tag = dollarTag() {
                try dollarString(tag)
                tokens.append(.string)
            } else if c == "$" || c == "@" || c == "?" || (dialect == .sqlite && c == ":" && at(1) != ":") {
                // A parameter: a migration binds none, and SQLite reads `$a(…)` as one.
                throw MigrationGuard.Problem("a parameter ('\(c)'): a migration binds none")
            } else if Self.isNameStart(c) {
                var word = ""
                while let c = at(0), Self.isNamePart(c) {
                    word.unicodeScalars.append(c)
                    i += 1
                }
                tokens.append(.word(word.lowercased()))
            } else {
                switch c {
                case ";": tokens.append(.semicolon)
                case "(": tokens.append(.open)
                case ")": tokens.append(.close)
                case ",": tokens.append(.comma)
                case ".": tokens.append(.dot)
                default: tokens.append(.other)
                }
                i += 1
            }
        }
        return tokens
    }

    /// A block comment: nested in PostgreSQL, not in SQLite.
    mutating func comment() throws {
        var depth = 0
        while let c = at(0) {
            if c == "/", at(1) == "*" {
                depth = dialect == .postgres ? depth + 1 : 1
                i += 2
            } else if c == "*", at(1) == "/" {
                depth -= 1
                i += 2
                if depth == 0 { return }
            } else {
                i += 1
            }
        }
        throw MigrationGuard.Problem("a comment that does not end")
    }

    /// A string from its opening quote: `''` is a quote; with `backslashes`, `\'` too.
    mutating func string(backslashes: Bool) throws {
        i += 1
        while let c = at(0) {
            if backslashes, c == "\\" {
                i += 2
            } else if c == "'" {
                if at(1) == "'" { i += 2 } else { i += 1; return }
            } else {
                i += 1
            }
        }
        throw MigrationGuard.Problem("a string that does not end")
    }

    mutating func quoted(closing: Unicode.Scalar) throws -> String {
        var name = ""
        i += 1
        while let c = at(0) {
            if c == closing {
                if closing != "]", at(1) == closing {
                    name.unicodeScalars.append(c)
                    i += 2
                    continue
                }
                i += 1
                return name
            }
            name.unicodeScalars.append(c)
            i += 1
        }
        throw MigrationGuard.Problem("a quoted name that does not end")
    }

    /// PostgreSQL's dollar-quote tag at `i` (`$$`, `$body$`, `$a1$`), or `nil` (a parameter).
    func dollarTag() -> [Unicode.Scalar]? {
        var j = i + 1
        guard j < text.count else { return nil }
        if text[j] != "$" {
            guard Self.isNameStart(text[j]) else { return nil }
            while j < text.count, Self.isNamePart(text[j]), text[j] != "$" { j += 1 }
            guard j < text.count, text[j] == "$" else { return nil }
        }
        return Array(text[i...j])
    }

    /// A dollar-quoted string: a literal here (a function body, which would run, is refused with
    /// its `CREATE FUNCTION`).
    mutating func dollarString(_ tag: [Unicode.Scalar]) throws {
        i += tag.count
        while i < text.count {
            if text[i...].starts(with: tag) {
                i += tag.count
                return
            }
            i += 1
        }
        throw MigrationGuard.Problem("a dollar-quoted string that does not end")
    }
}
