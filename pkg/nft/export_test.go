package nft

// NormalizeElements lets the external tests normalize elements as sets and
// lists do (types without a named interval set included).
var NormalizeElements = normalizeElements
