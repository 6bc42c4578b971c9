import Foundation
import HomeportClient
import HomeportWire

/// The public routes of the API prefix: identity, the anonymous refusal of app-info, standing.
extension ConformanceRun {
    /// Runs ``ConformanceCheck/identityShape``.
    func identityShape() async throws -> ConformanceOutcome {
        let answer = try await http.get(HomeportPath.serverIdentity)
        identityAnswer = answer
        if answer.status == 404 {
            olderServer = true
            return .olderServer(
                "404: no identity route (an older server, or django-allauth without Homeport): a client keeps it "
                    + "single-address")
        }
        let json = try answer.object(expecting: 200)
        var problems: [String] = []
        let extra = Set((json.object ?? [:]).keys).subtracting(["product", "protocolVersion", "instanceId"])
        if !extra.isEmpty {
            let names = extra.sorted().map { ServerText.clean($0, limit: 40) }.joined(separator: ", ")
            problems.append("fields other than the three: \(names)")
        }
        let product = json["product"]?.string
        if product?.isEmpty ?? true { problems.append("product is \(json["product"]?.shown ?? "missing")") }
        if json["protocolVersion"]?.integer != 1 {
            problems.append("protocolVersion is \(json["protocolVersion"]?.shown ?? "missing"), not the integer 1")
        }
        let id = json["instanceId"]?.string
        if let id, InstanceID(id) != nil {
            if id != id.lowercased() { problems.append("instanceId \(id) is not lowercase") }
            identity = (product ?? "", id)
        } else {
            problems.append("instanceId is \(json["instanceId"]?.shown ?? "missing"), not a UUID")
        }
        return .judge(
            problems,
            passing: "product \(json["product"]?.shown ?? ""), protocolVersion 1, instanceId \(id ?? "")")
    }

    /// Runs ``ConformanceCheck/identityHeaders``.
    func identityHeaders() async throws -> ConformanceOutcome {
        guard let answer = identityAnswer else { return .fail("no answer to read (see identity-shape)") }
        if olderServer { return Self.noPrefix }
        var problems: [String] = []
        if !answer.isJSONType { problems.append("Content-Type is \(answer.contentType), not application/json") }
        let cache = (answer.headers["cache-control"] ?? "").lowercased().split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        if !cache.contains("no-store") {
            problems.append(
                "Cache-Control is "
                    + (answer.headers["cache-control"].map { ServerText.clean($0, limit: 60) } ?? "missing")
                    + ", without no-store")
        }
        if answer.setsCookie {
            let names = answer.cookies.map { ServerText.clean($0.name, limit: 40) }.joined(separator: ", ")
            problems.append("it sets a cookie (\(names.isEmpty ? "Set-Cookie" : names))")
        }
        return .judge(problems, passing: "Content-Type application/json, Cache-Control no-store, no Set-Cookie")
    }

    /// Runs ``ConformanceCheck/identityProof``.
    func identityProof() async throws -> ConformanceOutcome {
        guard let identity, let id = InstanceID(identity.instanceID) else {
            return olderServer ? Self.noPrefix : .fail("no instanceId to prove (see identity-shape)")
        }
        let challenge = InstallationKeyCheck.challenge()
        let answer = try await http.get(HomeportPath.serverIdentity + "?challenge=" + challenge)
        let json = try answer.object(expecting: 200)
        var problems: [String] = []
        if json["instanceId"]?.string != identity.instanceID {
            problems.append("the answer to a challenge names instanceId \(json["instanceId"]?.shown ?? "nothing")")
        }
        let publicKey = json["publicKey"]?.string
        let signature = json["signature"]?.string
        let short = try await http.get(
            HomeportPath.serverIdentity + "?challenge=" + IdentityProof.base64URL(Array(repeating: 7, count: 8)))
        if short.status != 400 || String(decoding: short.body, as: UTF8.self).contains("signature") {
            problems.append("a challenge of 8 bytes got \(short.status), not 400 with nothing signed")
        }
        guard let publicKey else {
            if signature != nil { problems.append("a signature without a publicKey") }
            return problems.isEmpty
                ? .olderServer("no installation key: clients check this server's addresses by its id alone")
                : .fail(problems.joined(separator: "; "))
        }
        let host = IdentityProof.host(of: URL(string: http.base)?.host ?? "") ?? ""
        if IdentityProof.readKey(publicKey) == nil {
            problems.append("publicKey \(ServerText.clean(publicKey, limit: 60)) is not ed25519: and 32 bytes")
        } else if !InstallationKeyCheck.isValid(
            signature: signature ?? "", publicKey: publicKey, instanceId: id, challenge: challenge, host: host)
        {
            problems.append("the signature does not verify for this challenge and host \(host)")
        }
        return .judge(
            problems, passing: "key \(InstallationKeyCheck.fingerprint(publicKey) ?? "") proved for \(host)")
    }

    /// Runs ``ConformanceCheck/identityCredentialBlind``.
    func identityCredentialBlind() async throws -> ConformanceOutcome {
        guard let baseline = identityAnswer else { return .fail("no answer to compare with (see identity-shape)") }
        if olderServer { return Self.noPrefix }
        let token = [HomeportHeader.sessionToken: Conformance.randomToken()]
        let authorization = ["Authorization": "Bearer " + Conformance.randomToken()]
        let cookie = ["Cookie": Conformance.sessionCookies(Conformance.randomSessionKey())]
        let variants: [(String, [String: String])] = [
            ("a made-up X-Session-Token", token), ("a made-up Authorization header", authorization),
            ("made-up session cookies", cookie),
            ("all three", token.merging(authorization) { $1 }.merging(cookie) { $1 }),
        ]
        var problems: [String] = []
        var setCookie: [String] = []
        var identical = true
        for (label, headers) in variants {
            let answer = try await http.get(HomeportPath.serverIdentity, headers: headers)
            if answer.setsCookie { setCookie.append(label) }
            let (same, bytes) = answer.sameAnswer(as: baseline)
            if !same {
                problems.append(
                    answer.status == baseline.status
                        ? "with \(label) the body differs"
                        : "with \(label) it answers \(answer.summary) instead of \(baseline.status)")
            }
            identical = identical && bytes
        }
        if !setCookie.isEmpty { problems.append("it sets a cookie with " + setCookie.joined(separator: ", ")) }
        return .judge(
            problems,
            passing: (identical ? "the same bytes" : "the same fields (not the same bytes)")
                + " with a made-up token, Authorization header and session cookies; no Set-Cookie")
    }

    /// Runs ``ConformanceCheck/appInfoAnonymous``.
    func appInfoAnonymous() async throws -> ConformanceOutcome {
        if olderServer { return Self.noPrefix }
        return try await sameAnswerToStrangers(
            HomeportPath.appInfo, status: 401,
            expectation: { json in
                json["error"]?["code"]?.string == APIErrorCode.notAuthenticated
                    ? nil
                    : "the 401 is not the API's refusal: error.code is \(json["error"]?["code"]?.shown ?? "missing"), "
                        + "not not_authenticated (a client signs out on that one only)"
            }, passing: "401 not_authenticated, the same body")
    }

    /// Runs ``ConformanceCheck/standingStranger``.
    func standingStranger() async throws -> ConformanceOutcome {
        if olderServer { return Self.noPrefix }
        return try await sameAnswerToStrangers(
            HomeportPath.authStanding, status: 200,
            expectation: { json in
                let standing = json["standing"] ?? .null
                return standing == .null ? nil : "a stranger is told standing \(standing.shown)"
            }, passing: "200 with no standing, the same answer")
    }

    /// Asks `path` with no token, a random one and a malformed one: each must answer `status` JSON
    /// that meets `expectation` (`nil`, or the problem), and the same body as with no token.
    private func sameAnswerToStrangers(
        _ path: String, status: Int, expectation: (JSONValue) -> String?, passing: String
    ) async throws -> ConformanceOutcome {
        let first = try await http.get(path)
        var problems: [String] = []
        if let problem = expectation(try first.object(expecting: status)) { problems.append(problem) }
        let variants = [("a random token", Conformance.randomToken()), ("a malformed token", "not-a-token")]
        var identical = true
        for (label, token) in variants {
            let answer = try await http.get(path, token: token)
            guard answer.status == status else {
                problems.append("with \(label) it answers \(answer.summary) instead of \(status)")
                continue
            }
            let (same, bytes) = answer.sameAnswer(as: first)
            if !same { problems.append("with \(label) the body differs from the one with no token: it tells why") }
            identical = identical && bytes
        }
        return .judge(
            problems,
            passing: passing + (identical ? "" : " (in fields, not bytes)")
                + " with no token, a random token and a malformed one")
    }
}
