import Foundation
import HomeportClient
import HomeportWire

/// Verification by code, with the mailbox the server's mail lands in (`--mailbox DIR`): a fresh
/// address signs up, a wrong code is refused, the mailed one completes the sign-in. The account
/// it made is deleted afterwards (`account/delete`), or at least signed out.
extension ConformanceRun {
    func verificationByCode() async throws -> ConformanceOutcome {
        guard let mailbox else { return .skipped("needs --mailbox DIR: the directory the server's mail lands in") }
        let config = try await http.get(AllauthAppPath.path(AllauthAppPath.config)).object(expecting: 200)
        guard config["data"]?["account"]?["email_verification_by_code_enabled"]?.bool == true else {
            return .skipped("the server does not verify addresses by code (its config says so)")
        }
        let domain = account.flatMap { $0.email.split(separator: "@").last.map(String.init) } ?? "example.com"
        let email = "conformance-" + String(Conformance.randomSessionKey().prefix(10)) + "@" + domain
        let password = keep(Conformance.randomToken())
        let signup = try await http.post(
            AllauthAppPath.path(AllauthAppPath.signup), json: ["email": email, "password": password])
        guard signup.status == 401, let preLogin = signup.json?["meta"]?["session_token"]?.string else {
            return .fail("a sign-up answered \(signup.summary), not 401 with a pre-login token")
        }
        keep(preLogin)
        let pending = (signup.json?["data"]?["flows"]?.array ?? []).contains {
            $0["id"]?.string == "verify_email" && $0["is_pending"]?.bool == true
        }
        guard pending else { return .fail("the sign-up's flows have no pending verify_email") }
        let headers = [HomeportHeader.sessionToken: preLogin]
        let verify = AllauthAppPath.path(AllauthAppPath.emailVerify)
        guard let code = await mailedCode(to: email, in: mailbox) else {
            return .fail("no mail with a code for \(email) reached \(mailbox) within \(http.deadline)")
        }
        let wrongCode = code == "BCDF-GHJK" ? "BCDF-GHJL" : "BCDF-GHJK"
        let wrong = try await http.post(verify, json: ["key": wrongCode], headers: headers)
        guard wrong.status == 400, wrong.errorCode == AuthErrorCode.incorrectCode else {
            return .fail("a wrong code answered \(wrong.summary), not 400 incorrect_code")
        }
        let right = try await http.post(verify, json: ["key": code], headers: headers)
        var detail = "a wrong code is incorrect_code; the mailed one"
        if right.status == 200, let token = right.json?["meta"]?["session_token"]?.string {
            keep(token)
            detail += " signs in"
            let deleted = try? await http.post(
                AllauthAppPath.path(AllauthAppPath.accountDelete), json: ["password": password],
                headers: [HomeportHeader.sessionToken: token])
            if deleted?.status == 200 {
                detail += "; the account made for the check is deleted"
            } else {
                otherTokens.append(token)
                detail += "; the account made for the check (\(email)) stays, signed out"
            }
        } else if right.status == 401 {
            detail += " leaves the account waiting for approval (\(email) stays)"
        } else {
            return .fail("the mailed code answered \(right.summary), not 200 (or 401 waiting for approval)")
        }
        return .pass(detail)
    }

    /// The `XXXX-XXXX` code in the newest mail to `email` in `mailbox`, once one is there (within
    /// the request deadline).
    private func mailedCode(to email: String, in mailbox: String) async -> String? {
        let end = ContinuousClock.now + http.deadline
        while ContinuousClock.now < end {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: mailbox)) ?? []
            let mails = files.sorted().reversed().compactMap {
                try? String(contentsOfFile: mailbox + "/" + $0, encoding: .utf8)
            }
            if let mail = mails.first(where: { $0.contains(email) }),
                let match = mail.firstMatch(of: /\b[A-Z]{4}-[A-Z]{4}\b/)
            {
                return String(match.output)
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }
}
