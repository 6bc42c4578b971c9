import HomeportHTTP
import HomeportWire

extension Router where Context == RequestContext {
    /// The admin routes under the API prefix (signed in, header token only), for members of the
    /// `admin` group; everyone else gets 403 `forbidden`:
    /// - `GET /api/v1/admin/signups`: the accounts waiting or held, oldest first;
    /// - `POST /api/v1/admin/signups/{id}/approve|hold|reject`: a decision, as `users approve`.
    mutating func addAdmin(_ queue: SignupQueue) {
        get(HomeportPath.adminSignups) { _, context in
            _ = try Self.admin(context)
            return try .json(SignupQueueAnswer(signups: try queue.pending().map(Self.entry)))
        }
        for (action, approval) in SignupQueue.decisions {
            post(HomeportPath.adminSignups + "/:id/" + action) { request, context in
                let admin = try Self.admin(context)
                let id = try request.parameter("id", as: Int64.self)
                switch try queue.decide(id, approval, by: admin) {
                case .decided(let account): return try .json(Self.entry(account))
                case .notInQueue:
                    throw HTTPError(
                        status: .notFound, code: APIErrorCode.notFound, message: "No sign-up in the queue has this id.")
                }
            }
        }
    }

    /// The caller, when it is in the `admin` group.
    private static func admin(_ context: RequestContext) throws -> Account {
        guard case .signedIn(_, let account) = context.caller else { throw RequireSignedIn.refusal }
        guard account.isAdmin else {
            throw HTTPError(
                status: .forbidden, code: APIErrorCode.forbidden, message: "This is for the admin group's members only."
            )
        }
        return account
    }

    private static func entry(_ account: Account) -> SignupEntry {
        SignupEntry(
            id: account.id, email: account.email, stage: account.approval.rawValue,
            createdAt: Int64(account.createdAt.timeIntervalSince1970))
    }
}
