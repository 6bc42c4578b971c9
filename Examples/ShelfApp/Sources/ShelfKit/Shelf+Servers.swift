import Foundation
import HomeportClient

extension Shelf {
    /// Shows the server whose handle is `handle` (`nil`: none) and reads its books.
    public func select(_ handle: UUID?) async {
        selection = handle
        clearShown()
        await refresh()
    }

    /// Names a server on this device ("Home library"); an empty name takes the label away. Two
    /// servers cannot share a label.
    public func rename(_ handle: UUID, to label: String) {
        do {
            guard let record = client.directory.server(handle) else { return }
            let label = label.trimmingCharacters(in: .whitespaces)
            _ = try client.directory.setLabel(label.isEmpty ? nil : label, of: record.key)
            reload()
        } catch {
            show(error)
        }
    }

    /// Adds another address of the server shown (its VPN or public name, say). It is verified
    /// now: an address that answers as another installation, or not at all, is not added.
    /// Requests then fail over to it when the primary does not answer.
    public func addAddress(_ text: String) async {
        guard let selection else { return }
        do {
            let address = try ServerAddress(
                parsing: text.trimmingCharacters(in: .whitespaces), allowHTTP: allowsPlainHTTP)
            _ = try await client.addAddress(address, to: selection)
            reload()
        } catch {
            show(error)
        }
    }

    /// Signs out of the server shown: the server ends the session and the token leaves the
    /// vault. When the server cannot be reached the token is forgotten here all the same, and
    /// the person is told the session may still be open there.
    public func signOut() async {
        guard let signingOut = selection else { return }
        do {
            switch try await client.logout(signingOut) {
            case .revoked: notice = nil
            case .notConfirmed(let reason):
                notice = Notice(
                    "Signed out on this phone; the server did not confirm.",
                    advice: "End the session from the server's web page if you need to. (\(reason))")
            }
        } catch {
            show(error)
        }
        if selection == signingOut { clearShown() }
        reload()
    }

    /// Removes a server from this device: its token, its record and its push registration.
    public func remove(_ handle: UUID) async {
        do {
            try await client.remove(handle)
        } catch {
            show(error)
        }
        if handle == selection {
            selection = nil
            clearShown()
        }
        reload()
    }
}
