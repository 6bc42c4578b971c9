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

    /// Makes an invitation on `server` (`POST /api/v1/invitations`, for the accounts the server's
    /// `--invitations` allows: ``AccountAnswer/canInvite``): for `uses` sign-ups (1 when `nil`),
    /// working `expiresIn` seconds (a week when `nil`), bound to `email` (and mailed there) when
    /// given, putting the account it makes in `groups`. The answer holds the code and link, which
    /// nothing shows again. A refusal is thrown as refused: 403 for an account that may not
    /// invite, or a group it is not in; 400 naming the field; 429 past the day's budget.
    public func invite(
        on server: some ServerReference, email: String? = nil, groups: [String] = [], uses: Int64? = nil,
        expiresIn: Int64? = nil
    ) async throws -> InvitationAnswer {
        let request = InvitationRequest(
            email: email, groups: groups.isEmpty ? nil : groups, uses: uses, expiresIn: expiresIn)
        let made = try await send(
            "POST", HomeportPath.invitations, to: server, json: try JSONEncoder().encode(request),
            as: InvitationAnswer.self)
        return Self.cleaned(made)
    }

    /// The invitations the signed-in account made on `server`, newest first (without codes).
    public func invitations(on server: some ServerReference) async throws -> [InvitationAnswer] {
        let list: InvitationListAnswer = try await answer(
            "GET", HomeportPath.invitations, on: server, what: "invitations")
        return list.invitations.map(Self.cleaned)
    }

    /// Revokes invitation `id`, which the signed-in account made on `server`; one it did not
    /// make (or none) is thrown as refused (404).
    public func revokeInvitation(_ id: Int64, on server: some ServerReference) async throws {
        let answer = try await send("DELETE", HomeportPath.invitations + "/\(id)", to: server)
        guard answer.response.status == 204 else { throw Self.refusal(answer) }
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

    /// An invitation whose texts are cleaned for a person to read (a code or link that is not
    /// printable as it came is dropped: it could not be passed on as it is).
    private static func cleaned(_ invitation: InvitationAnswer) -> InvitationAnswer {
        var invitation = invitation
        invitation.email = invitation.email.map { ServerText.clean($0) }
        invitation.groups = invitation.groups.map { ServerText.clean($0) }
        invitation.code = invitation.code.flatMap { ServerText.clean($0) == $0 ? $0 : nil }
        invitation.link = invitation.link.flatMap { ServerText.clean($0, limit: 2048) == $0 ? $0 : nil }
        return invitation
    }

    /// An entry whose texts are cleaned for a person to read.
    private static func cleaned(_ entry: SignupEntry) -> SignupEntry {
        var entry = entry
        entry.email = ServerText.clean(entry.email)
        entry.stage = ServerText.clean(entry.stage)
        return entry
    }
}
