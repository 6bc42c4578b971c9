import Foundation
import HomeportWire

extension HomeportClient {
    /// The signed-in account on `server` (`GET /api/v1/account`): its id, address, groups and
    /// stage. An app shows the admin's queue when `groups` holds `admin`.
    public func account(on server: some ServerReference) async throws -> AccountAnswer {
        var account: AccountAnswer = try await answer("GET", HomeportPath.account, on: server, what: "account")
        // What the server says is shown to a person: cleaned as every text of a server's.
        account.email = ServerText.clean(account.email)
        account.groups = account.groups.map { ServerText.clean($0) }
        return account
    }

    /// The sign-ups waiting or held on `server`, oldest first (`GET /api/v1/admin/signups`; the
    /// `admin` group only: anyone else's answer is thrown as refused, 403).
    public func pendingSignups(on server: some ServerReference) async throws -> [SignupEntry] {
        let queue: SignupQueueAnswer = try await answer("GET", HomeportPath.adminSignups, on: server, what: "signups")
        return queue.signups.map(Self.cleaned)
    }

    /// What an admin decides on a sign-up.
    public enum SignupDecision: String, Sendable, CaseIterable {
        /// It may sign in.
        case approve
        /// Held: it waits, and is told so.
        case hold
        /// Rejected: it is told it waits.
        case reject
    }

    /// Decides on sign-up `id` on `server` (`POST /api/v1/admin/signups/{id}/approve|hold|reject`)
    /// and returns the account as it is now. An id not in the queue is thrown as refused (404).
    @discardableResult
    public func decide(_ decision: SignupDecision, signup id: Int64, on server: some ServerReference) async throws
        -> SignupEntry
    {
        let entry: SignupEntry = try await answer(
            "POST", HomeportPath.adminSignups + "/\(id)/\(decision.rawValue)", on: server, what: "a decision")
        return Self.cleaned(entry)
    }

    /// `method path`'s 200 answer on `server`, decoded; any other status is thrown as refused, and
    /// an answer that does not decode as a bad answer naming `what`.
    private func answer<Value: Decodable>(
        _ method: String, _ path: String, on server: some ServerReference, what: String
    ) async throws -> Value {
        let answer = try await send(method, path, to: server)
        guard answer.response.status == 200 else { throw Self.refusal(answer) }
        guard answer.response.isJSON, let value = try? JSONDecoder().decode(Value.self, from: answer.response.body)
        else {
            throw ClientError.badAnswer(address: answer.via.url, detail: "\(what) answered \(answer.response.kind)")
        }
        return value
    }

    /// An entry whose texts are cleaned for a person to read.
    private static func cleaned(_ entry: SignupEntry) -> SignupEntry {
        var entry = entry
        entry.email = ServerText.clean(entry.email)
        entry.stage = ServerText.clean(entry.stage)
        return entry
    }
}
