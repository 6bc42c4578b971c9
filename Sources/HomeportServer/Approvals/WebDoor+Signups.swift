import HomeportHTTP

extension WebDoor {
    static let signupsPath = base + "/signups"

    /// `GET /account/signups`: the sign-ups waiting or held, each with approve, hold and reject
    /// buttons; for the `admin` group only (403 for anyone else).
    func signupsPage(_ context: RequestContext, errors: [String] = [], status: Int = 200) throws -> HTTPResponse {
        guard case .signedIn(_, let account) = context.caller else { return .seeOther("/account/login") }
        guard let signups, account.isAdmin else { return notForYou() }
        let pending = try signups.pending().map { ($0.id, $0.email, $0.approval.rawValue) }
        return page(
            "Sign-ups", WebPage.signupsPage(csrf: context.csrfToken, pending: pending, errors: errors), status: status)
    }

    /// `POST /account/signups` (`id`, `decision`: `approve`, `hold` or `reject`): the same rules
    /// as the app's `POST /api/v1/admin/signups/{id}/…` and the operator's `users approve`.
    func decideSignup(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(_, let account) = context.caller else { return .seeOther("/account/login") }
        guard let signups, account.isAdmin else { return notForYou() }
        guard let id = fields["id"].flatMap({ Int64($0) }),
            let approval = fields["decision"].flatMap({ SignupQueue.decisions[$0] })
        else { return try signupsPage(context, errors: ["Choose a sign-up and what to do with it."], status: 400) }
        switch try signups.decide(id, approval, by: account) {
        case .decided: return .seeOther(Self.signupsPath)
        case .notInQueue:
            return try signupsPage(context, errors: ["That sign-up is no longer waiting."], status: 404)
        }
    }

    private func notForYou() -> HTTPResponse {
        page(
            "Not for you", WebPage.message("Only the server's admins decide on sign-ups.", link: ("/account", "Back")),
            status: 403)
    }
}

extension WebPage {
    /// The queue: each sign-up with its address and stage, and three buttons.
    static func signupsPage(csrf: String, pending: [(id: Int64, email: String, stage: String)], errors: [String])
        -> String
    {
        let rows = pending.map { signup in
            """
            <form method="post" action="\(WebDoor.signupsPath)">
            \(guardFields(csrf: csrf))
            <input type="hidden" name="id" value="\(signup.id)">
            <p><strong>\(htmlEscaped(signup.email))</strong> (\(htmlEscaped(signup.stage)))</p>
            <button type="submit" name="decision" value="approve">Approve</button>
            <button type="submit" name="decision" value="hold">Hold</button>
            <button type="submit" name="decision" value="reject">Reject</button>
            </form>
            """
        }
        return """
            \(Self.errors(errors))
            \(rows.isEmpty ? "<p>Nobody is waiting.</p>" : rows.joined())
            <nav><a href="/account">Your account</a></nav>
            """
    }
}
