/// The result of parsing a command line against a ``CommandSpec``.
public struct ParsedArguments: Sendable, Equatable {
    /// Option values by name; for flags, `"true"`.
    public var options: [String: String]
    /// Positional arguments in order.
    public var positionals: [String]
    /// Whether `--help` or `-h` was given.
    public var wantsHelp: Bool
    /// Every value given to each option, in order (an option that may be given several times).
    public var repeated: [String: [String]] = [:]

    /// Every value the option was given on the command line, in order.
    public func values(_ name: String) -> [String] { repeated[name] ?? [] }

    /// The option's value from the command line, else from its environment variable, else `nil`.
    public func value(_ name: String, spec: CommandSpec, environment: [String: String]) -> String? {
        if let value = options[name] { return value }
        guard let variable = spec.options.first(where: { $0.name == name })?.environment,
            let value = environment[variable], !value.isEmpty
        else { return nil }
        return value
    }

    /// Whether the flag was given.
    public func flag(_ name: String) -> Bool { options[name] != nil }

    /// Whether the flag was given, else whether its environment variable switches it on: `1`,
    /// `true`, `yes` or `on` do, `0`, `false`, `no`, `off` or an empty value do not (in any
    /// case); anything else is a usage error, never a guess.
    public func flag(_ name: String, spec: CommandSpec, environment: [String: String]) throws -> Bool {
        if flag(name) { return true }
        guard let variable = spec.options.first(where: { $0.name == name })?.environment,
            let value = environment[variable]
        else { return false }
        switch value.lowercased() {
        case "1", "true", "yes", "on": return true
        case "", "0", "false", "no", "off": return false
        default:
            throw UsageError(
                "\(variable) switches --\(name) on or off: 1 or 0 (true or false), not '\(value.prefix(100))'")
        }
    }
}

/// A command line that does not fit its command; the message names the problem and the fix.
public struct UsageError: Error, CustomStringConvertible, Equatable {
    /// A sentence for the user.
    public let description: String

    /// Creates a usage error.
    public init(_ description: String) {
        self.description = description
    }
}

extension CommandSpec {
    /// Parses `arguments` (without the command words): `--name VALUE`, `--name=VALUE`, flags,
    /// positionals, and `--` to end options.
    public func parse(_ arguments: [String]) throws -> ParsedArguments {
        var parsed = ParsedArguments(options: [:], positionals: [], wantsHelp: false)
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            if argument == "-h" || argument == "--help" {
                parsed.wantsHelp = true
                continue
            }
            guard argument.hasPrefix("--") else {
                throw UsageError("unknown option '\(argument)'; see '\(name) --help'")
            }
            var key = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = key.firstIndex(of: "=") {
                inlineValue = String(key[key.index(after: equals)...])
                key = String(key[..<equals])
            }
            guard let option = options.first(where: { $0.name == key }) else {
                throw UsageError("unknown option '--\(key)'; see '\(name) --help'")
            }
            if let valueName = option.valueName {
                if let inlineValue {
                    parsed.options[key] = inlineValue
                } else if index < arguments.count {
                    parsed.options[key] = arguments[index]
                    index += 1
                } else {
                    throw UsageError("--\(key) needs a value (\(valueName))")
                }
                parsed.repeated[key, default: []].append(parsed.options[key] ?? "")
            } else {
                guard inlineValue == nil else { throw UsageError("--\(key) takes no value") }
                parsed.options[key] = "true"
            }
        }
        let accepted = (self.arguments.count - optionalArguments)...self.arguments.count
        if !parsed.wantsHelp && !accepted.contains(parsed.positionals.count) {
            let expected = self.arguments.isEmpty ? "no arguments" : self.arguments.map(\.name).joined(separator: " ")
            throw UsageError("\(name) takes \(expected); see '\(name) --help'")
        }
        return parsed
    }
}

extension CommandSpec {
    /// Parses `arguments`; when they ask for `--help`, prints the help and returns `nil`.
    public func parseOrShowHelp(_ arguments: [String]) throws -> ParsedArguments? {
        let parsed = try parse(arguments)
        if parsed.wantsHelp {
            Output.line(help)
            return nil
        }
        return parsed
    }
}
