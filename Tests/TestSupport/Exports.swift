// The throwaway PostgreSQL cluster and the command runner it uses, shipped with the benchmark
// (Sources/PostgresScratchCluster): every test target gets them with TestSupport.
@_exported import PostgresScratchCluster
