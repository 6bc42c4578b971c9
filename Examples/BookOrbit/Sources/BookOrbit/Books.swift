import HomeportServer

/// A book on an account's reading list, as the API shows it.
public struct Book: Codable, Sendable, Hashable {
    /// Its id on this server.
    public var id: Int64
    /// Its title.
    public var title: String
    /// Its author, when given.
    public var author: String?
    /// When it was added, in Unix seconds.
    public var addedAt: Int64
    /// The book's loan, when one was started.
    public var loan: Loan?
}

/// `GET`, `POST /api/v1/books`, `PATCH` and `DELETE /api/v1/books/{id}`: the caller's own
/// books only.
struct Books {
    let services: ProductServices

    func list(_ caller: SignedIn) throws -> HTTPResponse {
        let rows = try services.database.execute(
            """
            SELECT b.id, b.title, b.author, b.added_at, l.id AS loan_id, l.state, l.ready_at
            FROM bookorbit_books b LEFT JOIN bookorbit_loans l ON l.book_id = b.id
            WHERE b.user_id = $1 ORDER BY b.id
            """, [.integer(caller.accountID)])
        return try .json(["books": rows.compactMap(Self.book)])
    }

    /// What `POST` and `PATCH` take: a title and an author, each optional here.
    struct Fields: Decodable {
        var title: String?
        var author: String?

        /// The title, checked (`nil` when none was given).
        func checkedTitle() throws -> String? {
            guard let title else { return nil }
            guard let text = Books.text(title), !text.isEmpty else {
                throw HTTPError.invalidField(
                    "title", "A title is 1–200 characters, with nothing hidden (no control or invisible characters).")
            }
            return text
        }

        /// The author, checked (`nil` when none was given; empty to remove one).
        func checkedAuthor() throws -> String? {
            guard let author else { return nil }
            guard let text = Books.text(author) else {
                throw HTTPError.invalidField(
                    "author",
                    "An author is at most 200 characters, with nothing hidden (no control or invisible characters).")
            }
            return text
        }
    }

    func add(_ request: HTTPRequest, _ caller: SignedIn) throws -> Book {
        let body = try request.decodeJSON(Fields.self)
        guard let title = try body.checkedTitle() else {
            throw HTTPError.invalidField("title", "A book needs a title.")
        }
        let author = try body.checkedAuthor()
        // Bad input costs nothing; a book that would be added does.
        try services.charge(BookOrbitBudget.booksAdded, caller)
        let now = services.clock.unixSeconds
        let row = try services.database.execute(
            "INSERT INTO bookorbit_books (user_id, title, author, added_at) VALUES ($1, $2, $3, $4) RETURNING id",
            [.integer(caller.accountID), .text(title), author.map { .text($0) } ?? .null, .integer(now)])
        guard let id = row.first?.int("id") else { throw HTTPError.internalError }
        return Book(id: id, title: title, author: author?.isEmpty == true ? nil : author, addedAt: now)
    }

    /// Changes what is given of a book's title and author (an empty author removes it).
    func rename(_ request: HTTPRequest, _ caller: SignedIn) throws -> Book {
        let id = try Self.bookID(request)
        let body = try request.decodeJSON(Fields.self)
        let (title, author) = (try body.checkedTitle(), try body.checkedAuthor())
        guard title != nil || author != nil else {
            throw HTTPError(
                status: .badRequest, code: "nothing_to_change", message: "Give a title, an author, or both.")
        }
        let changed = try services.database.execute(
            """
            UPDATE bookorbit_books SET title = COALESCE($3, title),
                author = CASE WHEN $4 IS NULL THEN author WHEN $4 = '' THEN NULL ELSE $4 END
            WHERE id = $1 AND user_id = $2 RETURNING id
            """,
            [
                .integer(id), .integer(caller.accountID), title.map { .text($0) } ?? .null,
                author.map { .text($0) } ?? .null,
            ])
        guard !changed.isEmpty else { throw Self.noSuchBook }
        return try book(id, caller)
    }

    /// The caller's book `id`, with its loan.
    func book(_ id: Int64, _ caller: SignedIn) throws -> Book {
        let rows = try services.database.execute(
            """
            SELECT b.id, b.title, b.author, b.added_at, l.id AS loan_id, l.state, l.ready_at
            FROM bookorbit_books b LEFT JOIN bookorbit_loans l ON l.book_id = b.id
            WHERE b.id = $1 AND b.user_id = $2
            """, [.integer(id), .integer(caller.accountID)])
        guard let book = rows.first.flatMap(Self.book) else { throw Self.noSuchBook }
        return book
    }

    func remove(_ request: HTTPRequest, _ caller: SignedIn) throws -> HTTPResponse {
        let id = try Self.bookID(request)
        let deleted = try services.database.execute(
            "DELETE FROM bookorbit_books WHERE id = $1 AND user_id = $2 RETURNING id",
            [.integer(id), .integer(caller.accountID)])
        guard !deleted.isEmpty else { throw Self.noSuchBook }
        return HTTPResponse(status: .noContent)
    }

    /// Another account's book and a book that never existed get the same answer.
    static let noSuchBook = HTTPError(status: .notFound, code: "book_not_found", message: "No such book on your list.")

    /// The `:id` of the path: 400 for one that is not a number, 404 for one no book can have.
    static func bookID(_ request: HTTPRequest) throws -> Int64 {
        let id = try request.parameter("id", as: Int64.self)
        guard id > 0 else { throw noSuchBook }
        return id
    }

    /// A title or an author: trimmed, at most 200 characters, nothing hidden (no control,
    /// bidirectional or invisible characters: what a notification may carry, so that a loan's
    /// notification never fails on its book's title); `nil` if not.
    static func text(_ raw: String) -> String? {
        let text = raw.trimmingCharacters(in: .whitespaces)
        guard text.count <= 200, text.isEmpty || DisplayText.isShown(text) else { return nil }
        return text
    }

    static func book(_ row: Row) -> Book? {
        guard let id = row.int("id"), let title = row.string("title"), let added = row.int("added_at") else {
            return nil
        }
        let loan = row.int("loan_id").flatMap { loanID in
            row.string("state").flatMap(LoanState.init(rawValue:)).map {
                Loan(id: loanID, bookID: id, state: $0, readyAt: row.int("ready_at") ?? 0)
            }
        }
        return Book(id: id, title: title, author: row.string("author"), addedAt: added, loan: loan)
    }
}
