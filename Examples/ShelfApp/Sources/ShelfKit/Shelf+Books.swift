import Foundation
import HomeportClient

extension Shelf {
    /// Reads the shown server's books. Through the address that answers as the installation on
    /// this network (another one than the primary, when the primary does not answer).
    public func refresh() async {
        guard let selection, isSignedIn else {
            books = []
            return
        }
        do {
            let list = try await client.send("GET", BookOrbitAPI.books, to: selection, as: BookOrbitAPI.BookList.self)
            // The person may have switched servers meanwhile: another server's books are not these.
            guard selection == self.selection else { return }
            books = list.books
        } catch {
            show(error)
        }
        reload()
    }

    /// Adds a book to the shown server's list. The server's refusal (an empty title, too many
    /// books this hour) is a notice with its own words.
    public func add(title: String, author: String? = nil) async {
        guard let selection else { return }
        do {
            let body = try JSONEncoder().encode(BookOrbitAPI.NewBook(title: title, author: author))
            _ = try await client.send("POST", BookOrbitAPI.books, to: selection, json: body, as: ShelfBook.self)
            await refresh()
        } catch {
            show(error)
        }
    }

    /// Starts a book's loan; the server notifies the person once it is ready (through the
    /// stream while the app shows the server, and as a push).
    public func lend(_ book: ShelfBook) async {
        guard let selection else { return }
        do {
            _ = try await client.send("POST", BookOrbitAPI.loan(of: book.id), to: selection, as: LoanStarted.self)
            await refresh()
        } catch {
            show(error)
        }
    }

    private struct LoanStarted: Decodable { var loan: ShelfLoan }
}
