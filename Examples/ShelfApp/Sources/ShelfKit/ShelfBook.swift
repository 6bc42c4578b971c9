import Foundation

/// A book on the person's list, as BookOrbit's `GET /api/v1/books` shows it. The app declares
/// the product's answers itself: it reads them, it does not link the server's code.
public struct ShelfBook: Decodable, Sendable, Hashable, Identifiable {
    /// Its id on its server.
    public var id: Int64
    /// Its title.
    public var title: String
    /// Its author, when given.
    public var author: String?
    /// Its loan, once one was started.
    public var loan: ShelfLoan?
}

/// A book's loan: `preparing`, then `ready` (the server notifies its owner then).
public struct ShelfLoan: Decodable, Sendable, Hashable {
    /// Its id on its server: a notification's object id.
    public var id: Int64
    /// `preparing` or `ready`.
    public var state: String
}

/// The answers of BookOrbit's routes the app reads.
enum BookOrbitAPI {
    static let books = "/api/v1/books"
    static func loan(of book: Int64) -> String { "/api/v1/books/\(book)/loan" }
    /// The code of a `loan ready` notification.
    static let loanReady = "bookorbit:loan.ready"

    struct BookList: Decodable { var books: [ShelfBook] }
    struct NewBook: Encodable {
        var title: String
        var author: String?
    }
}
