import HomeportHTTP
import HomeportWire

extension Router where Context == RequestContext {
    /// Mounts a product's routes under the API prefix, after Homeport's own: signed-in routes
    /// inside the prefix's group (its middleware has refused everyone not signed in before the
    /// handler runs), public ones each in a group of their own with `no-store` only. Throws, with
    /// nothing mounted, when a path is malformed, taken twice, Homeport's, signed-in under a
    /// public one, or public in a group that requires an account group.
    mutating func addProduct(_ declared: [ProductRoutes.Declared]) throws {
        var seen = Set<String>()
        var publicPaths: [[Substring]] = []
        var checked: [(ProductRoutes.Declared, [Substring])] = []
        for route in declared {
            let segments = try ProductRoutes.segments(of: route.path)
            for group in route.required where AccountGroups.name(group) != group {
                throw ConfigurationError(
                    "\(route.method.rawValue) \(route.path) requires the group '\(group.prefix(80))', which is not a group's name (1–64 lowercase letters, digits and -_.:)"
                )
            }
            let shape = segments.map { $0.hasPrefix(":") ? ":" : $0.lowercased() }.joined(separator: "/")
            guard seen.insert("\(route.method.rawValue) \(shape)").inserted else {
                throw ConfigurationError("the product declares \(route.method.rawValue) \(route.path) twice")
            }
            if route.open != nil {
                // A group's `requiring` is for every route in it: a public one would answer anyone.
                if let group = route.required.first {
                    throw ConfigurationError(
                        "\(route.method.rawValue) \(route.path) is public inside a group that requires '\(group)': a public route answers everyone; declare it outside the group"
                    )
                }
                publicPaths.append(segments)
            }
            checked.append((route, segments))
        }
        for (route, segments) in checked where route.signedIn != nil {
            if let open = publicPaths.first(where: { Self.covers($0, segments) }) {
                throw ConfigurationError(
                    "\(route.method.rawValue) \(route.path) is signed-in under the public path /"
                        + open.joined(separator: "/") + "; a public path's group would take it")
            }
        }
        // Public paths first: a group is declared before the routes under it.
        var grouped: [String: [ProductRoutes.Declared]] = [:]
        for (route, _) in checked where route.open != nil { grouped[route.path, default: []].append(route) }
        for path in grouped.keys.sorted() {
            group(HomeportPath.apiPrefix + path, middleware: [NoStoreMiddleware()]) { group in
                for route in grouped[path] ?? [] {
                    guard let handler = route.open else { continue }
                    group.add(route.method, "", placement: route.placement) { request, _ in try handler(request) }
                }
            }
        }
        for (route, _) in checked {
            guard let handler = route.signedIn else { continue }
            let required = route.required
            add(route.method, HomeportPath.apiPrefix + route.path, placement: route.placement) { request, context in
                // The group's middleware refused everyone else; this is the typed form of its check.
                guard case .signedIn(let session, let account) = context.caller else { throw RequireSignedIn.refusal }
                let caller = SignedIn(session: session, account: account, clientAddress: request.remoteAddress)
                if let missing = required.first(where: { !caller.isMember(of: $0) }) {
                    throw HTTPError(
                        status: .forbidden, code: APIErrorCode.forbidden,
                        message: "This is for the \(missing) group's members only.")
                }
                return try handler(request, caller)
            }
        }
    }

    /// Whether the path `prefix` covers `path` (a parameter matches any segment either way).
    private static func covers(_ prefix: [Substring], _ path: [Substring]) -> Bool {
        path.count >= prefix.count
            && zip(prefix, path).allSatisfy {
                $0.hasPrefix(":") || $1.hasPrefix(":") || $0.lowercased() == $1.lowercased()
            }
    }
}
