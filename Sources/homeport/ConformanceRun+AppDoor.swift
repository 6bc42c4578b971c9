import Foundation
import HomeportWire

/// The app door without an account: config, and how it reads a missing, empty or invalid token.
extension ConformanceRun {
    /// `/_allauth/app/v1/auth/session`.
    static let sessionPath = AllauthAppPath.path(AllauthAppPath.session)

    /// Runs ``ConformanceCheck/appDoorConfig``.
    func appDoorConfig() async throws -> ConformanceOutcome {
        let json = try await http.get(AllauthAppPath.path(AllauthAppPath.config)).envelope(expecting: 200)
        guard let account = json["data"]?["account"], account.object != nil else {
            return .fail("200 envelope without data.account")
        }
        let signup =
            switch account["is_open_for_signup"]?.bool {
            case true?: "; sign-up open"
            case false?: "; sign-up closed"
            case nil: ""
            }
        var providers = ""
        if let social = json["data"]?["socialaccount"] {
            guard let list = social["providers"]?.array else {
                return .fail("data.socialaccount without a providers array")
            }
            if let problem = Self.providerProblem(list) { return .fail("data.socialaccount: \(problem)") }
            providers = "; \(list.count) identity provider\(list.count == 1 ? "" : "s")"
        }
        return .pass("200 envelope with data.account" + signup + providers)
    }

    /// Runs ``ConformanceCheck/appDoorInvalidToken``.
    func appDoorInvalidToken() async throws -> ConformanceOutcome {
        let answer = try await http.get(Self.sessionPath, token: Conformance.randomToken())
        if answer.status == 401 {
            return .fail("401: a token the server never issued was taken for no token (expected 410)")
        }
        let json = try answer.envelope(expecting: 410)
        guard let meta = json["meta"]?.object, let authenticated = meta["is_authenticated"] else {
            return .fail("410 without meta.is_authenticated")
        }
        return authenticated == .null
            ? .pass("410 with meta.is_authenticated null")
            : .fail("410, but meta.is_authenticated is \(authenticated.shown), not null")
    }

    /// Runs ``ConformanceCheck/appDoorNoToken``.
    func appDoorNoToken() async throws -> ConformanceOutcome {
        try notSignedIn(
            try await http.get(Self.sessionPath), passing: "401 with data.flows and meta.is_authenticated false")
    }

    /// Runs ``ConformanceCheck/appDoorEmptyToken``.
    func appDoorEmptyToken() async throws -> ConformanceOutcome {
        guard http.emptyHeaderTransport != nil else {
            return .skipped(
                "libcurl cannot send an empty header, and URLSession cannot trust --ca-file: not checked over HTTPS "
                    + "with a private CA")
        }
        let answer = try await http.send(
            "GET", Self.sessionPath, headers: [HomeportHeader.sessionToken: ""], keepingEmptyHeaders: true)
        if answer.status == 410 {
            return .fail("410: the empty header was taken for an invalid token (an empty header is no token)")
        }
        return try notSignedIn(
            answer, passing: "401 with data.flows and meta.is_authenticated false, as with no header")
    }

    /// Whether `answer` is the app door's "not signed in": a 401 envelope with `data.flows` and
    /// `meta.is_authenticated` false.
    func notSignedIn(_ answer: ConformanceAnswer, passing detail: String) throws -> ConformanceOutcome {
        let json = try answer.envelope(expecting: 401)
        var problems: [String] = []
        if json["data"]?["flows"]?.array == nil { problems.append("401 without data.flows") }
        if json["meta"]?["is_authenticated"] != .bool(false) {
            problems.append(
                "meta.is_authenticated is \(json["meta"]?["is_authenticated"]?.shown ?? "missing"), not false")
        }
        return .judge(problems, passing: detail)
    }
}
