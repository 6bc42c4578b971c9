import Foundation
import HomeportServer

/// A person signed in to a ``TestServer``: requests made `as:` them carry their session token.
public struct TestAccount: Sendable, Hashable {
    /// The account's id (`SignedIn.accountID` in a handler).
    public var id: Int64
    /// The address it signed up with.
    public var email: String
    /// The session token of its app session.
    public var token: String
}

extension TestServer {
    /// Signs a new person up through the app door, as an app would, and returns them signed in.
    public func signUp(_ email: String, password: String = TestServer.password) throws -> TestAccount {
        try session(TestServer.signupPath, email: email, password: password)
    }

    /// Signs an existing person in through the app door: a new session of their account.
    public func signIn(_ email: String, password: String = TestServer.password) throws -> TestAccount {
        try session(TestServer.loginPath, email: email, password: password)
    }

    /// Ends `account`'s session, as the app's sign-out does.
    public func signOut(_ account: TestAccount) throws {
        let answer = try request(.delete, TestServer.sessionPath, as: account)
        // allauth answers a sign-out with 401 (no session now).
        guard answer.status == 401 else {
            throw TestServerError("sign-out answered \(answer.status): \(answer.text)")
        }
    }

    /// Puts `account` in `group` (as the operator's `users groups EMAIL add GROUP`); its next
    /// request carries it.
    public func addGroup(_ group: String, to account: TestAccount) throws {
        try changeGroup(.add, group, account)
    }

    /// Takes `account` out of `group`.
    public func removeGroup(_ group: String, from account: TestAccount) throws {
        try changeGroup(.remove, group, account)
    }

    private func changeGroup(_ change: GroupService.Change, _ group: String, _ account: TestAccount) throws {
        let service = GroupService(database: application.database, clock: clock, logger: Logger(label: "test"))
        switch try service.groups(email: account.email, (change, group)) {
        case .groups: return
        case .noAccount: throw TestServerError("no account uses \(account.email)")
        case .invalidName: throw TestServerError("'\(group)' is not a group's name")
        case .tooMany: throw TestServerError("\(account.email) is in too many groups")
        }
    }

    static let signupPath = "/_allauth/app/v1/auth/signup"
    static let loginPath = "/_allauth/app/v1/auth/login"
    static let sessionPath = "/_allauth/app/v1/auth/session"

    private func session(_ path: String, email: String, password: String) throws -> TestAccount {
        let answer = try request(
            .post, path, body: try JSONEncoder().encode(["email": email, "password": password]),
            headers: [("Content-Type", "application/json")])
        guard answer.status == 200, let object = answer.object,
            let token = (object["meta"] as? [String: Any])?["session_token"] as? String,
            let user = ((object["data"] as? [String: Any])?["user"] as? [String: Any]),
            let id = (user["id"] as? NSNumber)?.int64Value
        else { throw TestServerError("\(path) for \(email) answered \(answer.status): \(answer.text)") }
        return TestAccount(id: id, email: email, token: token)
    }
}
