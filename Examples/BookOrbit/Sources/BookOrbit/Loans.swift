import HomeportServer

/// A loan of a book, as the API shows it.
public struct Loan: Codable, Sendable, Hashable {
    /// Its id on this server (the notification's object id).
    public var id: Int64
    /// The book lent.
    public var bookID: Int64
    /// Preparing, then ready.
    public var state: LoanState
    /// When it is (or was) ready, in Unix seconds.
    public var readyAt: Int64
}

/// Where a loan stands: as stored (the schema allows these two) and as the API shows it.
public enum LoanState: String, Codable, Sendable, Hashable {
    /// Started; ready after ``Loans/preparation`` seconds.
    case preparing
    /// Ready to read; its owner was notified.
    case ready
}

/// `POST` and `GET /api/v1/books/{id}/loan`, and the task that readies loans and notifies their
/// owners with `bookorbit:loan.ready` (thread `loan:{id}`, object id the loan's).
struct Loans {
    /// How long a loan takes to prepare, in seconds.
    static let preparation: Int64 = 1

    let services: ProductServices

    func start(_ request: HTTPRequest, _ caller: SignedIn) throws -> [String: Loan] {
        let bookID = try Books.bookID(request)
        let now = services.clock.unixSeconds
        let loan: Loan = try services.database.transaction { db in
            guard
                !(try db.execute(
                    "SELECT id FROM bookorbit_books WHERE id = $1 AND user_id = $2",
                    [.integer(bookID), .integer(caller.accountID)])).isEmpty
            else { throw Books.noSuchBook }
            // One loan per book: of two started at once, the second finds the first's row.
            let row = try db.execute(
                """
                INSERT INTO bookorbit_loans (book_id, user_id, state, ready_at, created_at)
                VALUES ($1, $2, 'preparing', $3, $4) ON CONFLICT (book_id) DO NOTHING RETURNING id
                """, [.integer(bookID), .integer(caller.accountID), .integer(now + Self.preparation), .integer(now)])
            guard let id = row.first?.int("id") else {
                throw HTTPError(status: .conflict, code: "loan_exists", message: "This book already has a loan.")
            }
            return Loan(id: id, bookID: bookID, state: .preparing, readyAt: now + Self.preparation)
        }
        return ["loan": loan]
    }

    /// Every account's loans, oldest first: for librarians (the route requires the group).
    func all() throws -> [String: [Loan]] {
        let rows = try services.database.execute(
            "SELECT id, book_id, state, ready_at FROM bookorbit_loans ORDER BY id LIMIT 1000")
        let loans = rows.compactMap { row -> Loan? in
            guard let id = row.int("id"), let book = row.int("book_id"),
                let state = row.string("state").flatMap(LoanState.init(rawValue:))
            else { return nil }
            return Loan(id: id, bookID: book, state: state, readyAt: row.int("ready_at") ?? 0)
        }
        return ["loans": loans]
    }

    func show(_ request: HTTPRequest, _ caller: SignedIn) throws -> [String: Loan] {
        let bookID = try Books.bookID(request)
        guard
            let row = try services.database.execute(
                "SELECT id, state, ready_at FROM bookorbit_loans WHERE book_id = $1 AND user_id = $2",
                [.integer(bookID), .integer(caller.accountID)]
            ).first, let id = row.int("id"), let state = row.string("state").flatMap(LoanState.init(rawValue:))
        else { throw HTTPError(status: .notFound, code: "loan_not_found", message: "This book has no loan.") }
        return ["loan": Loan(id: id, bookID: bookID, state: state, readyAt: row.int("ready_at") ?? 0)]
    }

    /// Readies every loan whose preparation is over and notifies its owner: each loan in one
    /// transaction, so that a loan is ready exactly when its owner was notified. Of several
    /// replicas, one readies a loan (the update finds it preparing once). A loan whose
    /// notification fails stays preparing and is tried at the next run; the others go on.
    func notifyReady() throws {
        let due = try services.database.execute(
            "SELECT id FROM bookorbit_loans WHERE state = 'preparing' AND ready_at <= $1 ORDER BY id",
            [.integer(services.clock.unixSeconds)])
        var failure: (any Error)?
        for id in due.compactMap({ $0.int("id") }) {
            do {
                try services.database.transaction { db in
                    guard
                        let loan = try db.execute(
                            """
                            UPDATE bookorbit_loans SET state = 'ready' WHERE id = $1 AND state = 'preparing'
                            RETURNING user_id, book_id
                            """, [.integer(id)]
                        ).first, let owner = loan.int("user_id"), let bookID = loan.int("book_id")
                    else { return }
                    let title =
                        try db.execute("SELECT title FROM bookorbit_books WHERE id = $1", [.integer(bookID)]).first?
                        .string("title") ?? "A book"
                    try services.notifications.notify(
                        ProductNotification(
                            code: BookOrbitCode.loanReady, title: "Your loan is ready",
                            body: "\(title.prefix(150)) is ready to read.", thread: "loan:\(id)", objectID: id),
                        to: owner, in: db)
                }
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }
}
