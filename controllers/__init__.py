"""The controllers bundled with kube-informers: one package per controller."""
