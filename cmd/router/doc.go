// Command router is llmrouter: an OpenAI-compatible reverse proxy that
// routes each request to a healthy LLM provider.
//
//	router [serve] [--config FILE]   serve (default: the embedded config)
//	router validate [--config FILE]  check a config as serve would, print the routing table
//	router status [--admin URL]      provider table of a running router
//	router version                   print the version
//	router help [COMMAND]            the commands and their flags
package main
