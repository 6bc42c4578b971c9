import Foundation
import HomeportHTTP
import HomeportWire
import Synchronization

/// Forward auth's answers, prepared once per session and sent as they are
/// (``PreparedResponse``): a proxy asks about every request of a product, and building the same
/// three header fields and body each time cost the route a fifth more than app-info.
///
/// Kept by the session's stored form, and served only while the account's id and address are
/// still those the session reader found (an address change gets a new answer at once). Who may
/// have an answer is decided before, on every request, by the one session reader: an ended
/// session never reaches here. Emptied whole when it holds ``capacity`` answers (about a
/// kilobyte each); an answer prepared again is the same.
final class ForwardAnswers: Sendable {
    private struct Entry {
        var accountID: Int64
        var email: String
        var verified: Bool
        var groups: [String]
        var prepared: PreparedResponse
        /// The same answer without its body, for a proxy's question (``response(session:account:headOnly:)``).
        var headOnly: PreparedResponse
    }

    /// Answers kept at most.
    let capacity: Int
    private let known = Mutex<[String: Entry]>([:])

    init(capacity: Int = 10_000) {
        self.capacity = capacity
    }

    /// The answer for `session` of `account`: 200, the account in `X-Homeport-*` fields and the body,
    /// `no-store` (as the API prefix's middleware leaves every answer). With `headOnly`, the same
    /// fields and no body: a proxy reads the head alone, and Go's HTTP client (Caddy's, Traefik's)
    /// keeps its connection to Homeport only when the whole answer was read.
    func response(session: Session, account: Account, headOnly: Bool = false) throws -> HTTPResponse {
        let verified = account.emailVerified ?? false
        let groups = account.groups ?? []
        let cached = known.withLock { $0[session.keyHash] }
        if let cached, cached.accountID == account.id, cached.email == account.email, cached.verified == verified,
            cached.groups == groups
        {
            return (headOnly ? cached.headOnly : cached.prepared).response
        }
        let caller = SignedIn(session: session, account: account, clientAddress: "")
        let handle = caller.sessionHandle
        var answer = HTTPResponse.json(bytes: try Self.body(caller, handle: handle, verified: verified))
        answer.headers.add(HomeportHeader.accountID, String(caller.accountID))
        answer.headers.add(HomeportHeader.accountEmail, caller.email)
        answer.headers.add(HomeportHeader.accountEmailVerified, verified ? "true" : "false")
        answer.headers.add(HomeportHeader.sessionHandle, handle)
        // Always there, so that a proxy copying it never leaves a client's own (or, as Caddy 2.6
        // does for an absent field, its placeholder's name). None is an empty value, written as
        // one space (libmicrohttpd sends no empty field; HTTP drops the space around a value).
        answer.headers.add(HomeportHeader.accountGroups, groups.isEmpty ? " " : groups.joined(separator: ","))
        answer.headers.set("Cache-Control", "no-store")
        let prepared = PreparedResponse(answer)
        answer.body = Data()
        let bare = PreparedResponse(answer)
        known.withLock { known in
            if known.count >= capacity { known.removeAll(keepingCapacity: true) }
            known[session.keyHash] = Entry(
                accountID: account.id, email: account.email, verified: verified, groups: groups, prepared: prepared,
                headOnly: bare)
        }
        return (headOnly ? bare : prepared).response
    }

    /// Answers kept now.
    var count: Int { known.withLock { $0.count } }

    /// ``ForwardAuthAnswer``'s bytes, as the JSON encoder writes them: written directly, since
    /// an address is a dot-atom and a group's name letters, digits and `-_.:`, with nothing JSON
    /// escapes (the encoder still writes one that has).
    static func body(_ caller: SignedIn, handle: String, verified: Bool) throws -> Data {
        let escaped: (UInt8) -> Bool = { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }
        guard !caller.email.utf8.contains(where: escaped),
            !caller.groups.contains(where: { $0.utf8.contains(where: escaped) })
        else {
            return try HTTPResponse.encode(
                ForwardAuthAnswer(
                    accountId: caller.accountID, email: caller.email, session: handle, emailVerified: verified,
                    groups: caller.groups))
        }
        let groups = caller.groups.map { "\"" + $0 + "\"" }.joined(separator: ",")
        return Data(
            #"{"accountId":\#(caller.accountID),"email":"\#(caller.email)","emailVerified":\#(verified),"groups":[\#(groups)],"session":"\#(handle)"}"#
                .utf8)
    }
}
