// What a product built on Homeport needs comes with `import HomeportServer` alone: requests and
// responses, the storage layer its migrations and queries use, and the logger. The wire types
// stay HomeportWire's (their few a product names, such as `DisplayText`, are aliased here).
@_exported import HomeportHTTP
@_exported import HomeportLogging
@_exported import HomeportStorage
