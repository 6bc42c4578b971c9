import Foundation
import HomeportClient
import HomeportWire

/// Invitations and the signed-in account: a made-up invitation signs nobody up, and the account
/// and its invitations read as the protocol says.
extension ConformanceRun {
    /// Runs ``ConformanceCheck/invitationRefused``. The password is too short on purpose: a
    /// server that does not know invitations refuses it for that, and makes no account.
    func invitationRefused() async throws -> ConformanceOutcome {
        if olderServer { return Self.noPrefix }
        let email = "conformance-\(Conformance.randomToken().prefix(12).lowercased())@example.invalid"
        let answer = try await http.post(
            AllauthAppPath.path(AllauthAppPath.signup),
            json: ["email": email, "password": "x", "invitation": keep(Conformance.randomToken())])
        if let extra = issuedToken(answer) {
            otherTokens.append(extra)
            return .fail("\(answer.status) with a session token for a made-up invitation")
        }
        if answer.status == 429 { return .skipped("429: this address's sign-up budget is spent; try again later") }
        let json = try answer.envelope(expecting: 400)
        let codes = (json["errors"]?.array ?? []).compactMap { $0["code"]?.string }
        if codes == [AuthErrorCode.invalidInvitation] { return .pass("400 invalid_invitation alone, no account") }
        if !codes.contains(AuthErrorCode.invalidInvitation) {
            return .olderServer("400 without invalid_invitation: a server without invitations (nothing was made)")
        }
        let shown = codes.map { ServerText.clean($0, limit: 40) }.joined(separator: ", ")
        return .fail("400 with \(shown): a made-up invitation must be the one error, saying nothing else")
    }

    /// Runs ``ConformanceCheck/household``.
    func household() async throws -> ConformanceOutcome {
        guard let account else { return Self.noAccount }
        guard let token else { return Self.noSession }
        if olderServer { return Self.noPrefix }
        let answer = try await http.get(HomeportPath.account, token: token)
        if answer.status == 404 { return .olderServer("no GET /api/v1/account: a server without groups") }
        let json = try answer.object(expecting: 200)
        var problems: [String] = []
        if json["id"]?.integer == nil { problems.append("id is \(json["id"]?.shown ?? "missing"), not an integer") }
        if json["email"]?.string?.lowercased() != account.email.lowercased() {
            problems.append("email is \(json["email"]?.shown ?? "missing"), not the signed-in address")
        }
        let groups = json["groups"]?.array?.compactMap(\.string)
        if groups == nil || groups?.count != json["groups"]?.array?.count {
            problems.append("groups is \(json["groups"]?.shown ?? "missing"), not an array of strings")
        } else if groups != groups?.sorted() {
            problems.append("groups are not sorted")
        }
        if json["stage"]?.string != "approved" {
            problems.append("stage is \(json["stage"]?.shown ?? "missing"), not approved")
        }
        let canInvite = json["canInvite"]
        if let canInvite, canInvite.bool == nil { problems.append("canInvite is \(canInvite.shown), not a boolean") }
        let shown = (groups ?? []).map { ServerText.clean($0, limit: 40) }.joined(separator: ", ")
        // A server with groups but older than invitations says no canInvite, and has no list.
        guard canInvite != nil else {
            return .judge(problems, passing: "the account in groups [\(shown)]; a server without invitations")
        }
        let list = try await http.get(HomeportPath.invitations, token: token).object(expecting: 200)
        guard let invitations = list["invitations"]?.array else {
            return .judge(
                problems + ["invitations is \(list["invitations"]?.shown ?? "missing"), not an array"], passing: "")
        }
        for invitation in invitations {
            if invitation["code"] != nil || invitation["link"] != nil {
                problems.append("an invitation is listed with its code: only the answer that made it may hold it")
                break
            }
            if invitation["id"]?.integer == nil || invitation["usesLeft"]?.integer == nil
                || invitation["expiresAt"]?.integer == nil || invitation["groups"]?.array == nil
            {
                problems.append("an invitation lacks id, usesLeft, expiresAt or groups")
                break
            }
        }
        return .judge(
            problems,
            passing: "the account in groups [\(shown)], "
                + (canInvite?.bool == true ? "may invite" : "may not invite")
                + ", \(invitations.count) invitation\(invitations.count == 1 ? "" : "s") listed without codes")
    }
}
