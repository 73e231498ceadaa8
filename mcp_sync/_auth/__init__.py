"""_auth"""
